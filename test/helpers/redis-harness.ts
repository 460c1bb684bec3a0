/**
 * The token store contract's harness on a real Redis (test/helpers/redis-server.ts): stores
 * opened as the proxy opens them, and an administrator's client that reads the store back raw.
 */
import { Cluster, Redis } from 'iovalkey';
import { systemClock, type Clock } from '../../src/core/clock.js';
import type { TlsMaterial } from '../../src/net/tls-material.js';
import { openTokenStore, type OpenedStore } from '../../src/store/open-store.js';
import { parseStoreUrl, type StoreMode } from '../../src/store/redis-url.js';
import type { StoreSettings } from '../../src/store/settings.js';
import { scryptDeriver, sharedDeriver, type KeyDeriver } from '../../src/store/slot-key.js';
import type { TokenStore, TokenStoreObserver } from '../../src/store/contract.js';
import { FakeLog } from './fakes.js';
import { pollUntil } from './index.js';
import { ADMIN_PASSWORD } from './redis-server.js';
import type { RawKey, StoreHarness } from './store-contract.js';

/** One derivation per credential for a whole test file: scrypt costs tens of milliseconds each. */
export const testDeriver: KeyDeriver = sharedDeriver(scryptDeriver());

export interface RedisTarget {
  /** The URL(s) as TOKEN_STORE_URL holds them, user included, and a password only to test one there. */
  url: string;
  mode: StoreMode;
  /** The password as TOKEN_STORE_PASSWORD_FILE would hold it. */
  password: string | undefined;
  tls?: TlsMaterial;
  /** The administrator's TLS options, for reading the store back. */
  adminTls?: { ca: string; cert?: string; key?: string };
  /** `TOKEN_STORE_SCRIPTS`. */
  scripts?: 'eval' | 'functions';
}

/** The checked settings for `target`, as `checkStoreSettings` would give them. */
export function storeSettings(target: RedisTarget, prefix: string, timeoutMs = 250): StoreSettings {
  const { endpoint, problems } = parseStoreUrl(target.url, target.mode, 'TOKEN_STORE_URL');
  if (endpoint === undefined) throw new Error(problems.join('; '));
  // A password in the URL is the URL's; otherwise `password` stands for the file's.
  const password = endpoint.urlPassword ?? target.password;
  return {
    endpoint,
    prefix,
    timeoutMs,
    scripts: target.scripts ?? 'eval',
    password,
    passwordSource:
      endpoint.urlPassword !== undefined ? 'TOKEN_STORE_URL' : password === undefined ? undefined : 'TOKEN_STORE_PASSWORD_FILE',
    passwordFileText: endpoint.urlPassword === undefined ? target.password : undefined,
    keyMaterial: undefined,
  };
}

/** A store opened as the proxy opens it: the store itself, with what the wiring changes on it. */
export type TestStore = TokenStore & Pick<OpenedStore, 'setPassword' | 'close'>;

/** Opens a store on `target` as the proxy does; the caller closes it. */
export function openStore(
  target: RedisTarget,
  prefix: string,
  options: {
    fetchTimeoutMs?: number;
    observer?: TokenStoreObserver;
    timeoutMs?: number;
    log?: FakeLog;
    idleMs?: number;
    /** The store's clock (its operation deadline, idle close and background checks); the system's by default. */
    clock?: Clock;
  } = {},
): TestStore {
  const opened = openTokenStore({
    settings: storeSettings(target, prefix, options.timeoutMs),
    fetchTimeoutMs: options.fetchTimeoutMs ?? 10_000,
    tls: target.tls ?? {},
    clock: options.clock ?? systemClock,
    random: Math.random,
    log: options.log ?? new FakeLog(),
    observer: options.observer,
    derive: testDeriver,
    idleMs: options.idleMs,
  });
  // The store's own operations (its methods need no `this`), closed as the opened store closes
  // (which also stops watching files).
  return Object.assign(Object.create(opened.tokens) as TokenStore, { setPassword: opened.setPassword, close: opened.close });
}

/** An administrator's client: the default user, every command. */
export function adminClient(target: RedisTarget): Redis | Cluster {
  const nodes = target.url.split(',').map((u) => new URL(u));
  const tls = target.adminTls;
  const redisOptions = { password: ADMIN_PASSWORD, ...(tls ? { tls: { ...tls, checkServerIdentity: () => undefined } } : {}) };
  return target.mode === 'cluster'
    ? new Cluster(
        nodes.map((u) => ({ host: u.hostname, port: Number(u.port) })),
        { redisOptions },
      )
    : new Redis({ host: nodes[0]!.hostname, port: Number(nodes[0]!.port), ...redisOptions });
}

/** Every key under `prefix`, read raw by the administrator. */
export async function dumpStore(admin: Redis | Cluster, prefix: string): Promise<RawKey[]> {
  const masters = admin instanceof Cluster ? admin.nodes('master') : [admin];
  const keys = (await Promise.all(masters.map((m) => m.keys(`${prefix}*`)))).flat();
  return Promise.all(
    keys.map(async (key) => {
      const type = await admin.type(key);
      const value = type === 'hash' ? await admin.hgetall(key) : ((await admin.get(key)) ?? '');
      return { key, value, ttlMs: await admin.pttl(key) };
    }),
  );
}

let run = 0;

/** The contract's harness on `target`; `admin` reads back; the stores it opens are closed by `closeAll`. */
export function redisHarness(
  target: RedisTarget,
  admin: Redis | Cluster,
  basePrefix: string,
): StoreHarness & { closeAll(): Promise<void> } {
  const prefix = `${basePrefix}${++run}-${Date.now()}:`;
  const opened: TestStore[] = [];
  return {
    prefix,
    async open(options = {}) {
      // A generous store timeout: the contract is about what the store holds, not how fast a loaded machine answers.
      const store = openStore(target, prefix, { timeoutMs: 10_000, ...options });
      opened.push(store);
      return store;
    },
    now: () => Date.now(),
    // How soon the store gets there is the in-memory run's to check, on its fake clock; on a real
    // server's clock, which a loaded machine runs late, the deadline only stops a test that hangs.
    until: (check, withinMs) => pollUntil(check, { timeoutMs: Math.max(withinMs, 20_000), intervalMs: 20 }),
    dump: () => dumpStore(admin, prefix),
    async put(key, value, ttlMs) {
      await admin.del(key);
      if (typeof value === 'string') await admin.set(key, value);
      else await admin.hset(key, value);
      if (ttlMs !== undefined) await admin.pexpire(key, ttlMs);
    },
    async expire(key, ttlMs) {
      await admin.pexpire(key, ttlMs);
    },
    async fill(key, bytes, { field, ttlMs } = {}) {
      // Made inside Redis: a string by SETRANGE, a hash field by a script of the administrator's.
      if (field === undefined) {
        await admin.del(key);
        await admin.setrange(key, bytes - 1, 'A');
      } else {
        await admin.eval("redis.call('HSET', KEYS[1], ARGV[1], string.rep('A', tonumber(ARGV[2])))", 1, key, field, bytes);
      }
      if (ttlMs !== undefined) await admin.pexpire(key, ttlMs);
    },
    async scriptCommands(during) {
      // MONITOR on every primary shows each command a script runs, with "lua" as its source, in order.
      const nodes = admin instanceof Cluster ? admin.nodes('master') : [admin];
      const monitors = await Promise.all(nodes.map((n) => n.monitor()));
      const commands: string[][] = [];
      try {
        for (const m of monitors)
          m.on('monitor', (_time: string, args: string[], source: string) => void (source === 'lua' && commands.push(args)));
        const value = await during();
        // A mark through each primary after the operation: once MONITOR shows it, it has shown all before it.
        await Promise.all(
          nodes.map(async (node, i) => {
            const mark = `${prefix}mark-${i}-${Math.random()}`;
            const seen = new Promise<void>((resolve) =>
              monitors[i]!.on('monitor', (_time: string, args: string[]) => void (args[1] === mark && resolve())),
            );
            await node.echo(mark);
            await seen;
          }),
        );
        return { value, commands };
      } finally {
        for (const m of monitors) m.disconnect();
      }
    },
    async bytesSent() {
      // Every primary's count, from INFO's stats section (a cluster spreads keys over three).
      const nodes = 'nodes' in admin ? admin.nodes('master') : [admin];
      const counts = await Promise.all(nodes.map(async (n) => Number(/total_net_output_bytes:(\d+)/.exec(await n.info('stats'))?.[1])));
      return counts.reduce((a, b) => a + b, 0);
    },
    async closeAll() {
      await Promise.all(opened.map((s) => s.close()));
    },
  };
}
