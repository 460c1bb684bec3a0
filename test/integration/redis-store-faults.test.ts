/**
 * A real token store misbehaving, and the proxy's store never worse than none: a closed port, a
 * socket that accepts and never answers, a refused password, a server killed and restarted on its
 * port, stopped, out of memory, failing over, a user without the permissions, TLS that does not
 * verify. Each operation ends as a timeout by the store timeout, counted on the store's own clock
 * where the moment matters (a clock the test moves: however slowly a loaded machine runs, the
 * order of events is the same); the store comes back by itself; the password is never written
 * anywhere.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseCaFile } from '../../src/net/tls-material.js';
import { functionLibrary, LIBRARY_NAME } from '../../src/store/scripts.js';
import type { Slot, StoredToken } from '../../src/store/contract.js';
import { clientCert, createCa, localhostCert } from '../helpers/certs.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';
import { closedPort, pollUntil } from '../helpers/index.js';
import { openStore, type RedisTarget } from '../helpers/redis-harness.js';
import { blackHole, heldStore, startRedis, startRedisCluster, type RedisServer } from '../helpers/redis-server.js';
import { lacks, skipNote } from '../helpers/tools.js';

const USER = { name: 'ticket-proxy', password: 'store-password-5c1', prefix: 'tap-test:' };
const PREFIX = 'tap-test:faults:';
const CREDENTIAL = { description: 'client_id=app scope=tickets.read', keyMaterial: Buffer.from('client-secret') };
/**
 * The store timeout where it is the point; elsewhere a generous one, so a loaded machine is no
 * fault (an operation of a loopback store that times out is logged as a problem of its own).
 */
const TIMEOUT_MS = 150;
const GENEROUS_MS = 10_000;
/** A deadline that only stops a test that hangs: what it waits for comes on an event, however late. */
const HUNG_MS = 20_000;

type Opened = ReturnType<typeof openStore>;
const opened: Opened[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

async function open(
  target: RedisTarget,
  options: Parameters<typeof openStore>[2] = {},
): Promise<{ store: Opened; cred: Slot; log: FakeLog }> {
  const log = options.log ?? new FakeLog();
  const store = openStore(target, PREFIX, { timeoutMs: GENEROUS_MS, ...options, log });
  opened.push(store);
  return { store, cred: await store.slot(CREDENTIAL), log };
}

function token(): StoredToken {
  const now = Date.now();
  return {
    accessToken: `tok-${now}-${Math.random()}`,
    tokenType: 'Bearer',
    issuedAtMs: now,
    expiresAtMs: now + 600_000,
    usableUntilMs: now + 590_000,
  };
}

/**
 * Waits for a background check to find the store again: the first comes 0.5-1 s after it went
 * down, the next ones twice as far apart each time (on the real clock: a check moved on by a
 * test's clock while it runs would end by the store timeout).
 */
async function untilUp(store: Opened): Promise<void> {
  await pollUntil(() => store.up, { timeoutMs: HUNG_MS, intervalMs: 50 });
}

/** The ticket-proxy user's connections the server holds. */
async function connections(server: RedisServer): Promise<number> {
  return (await server.cli('CLIENT', 'LIST')).split('\n').filter((l) => l.includes(`user=${USER.name}`)).length;
}

describe.skipIf(lacks('redis-server') || lacks('redis-cli'))(`a token store that misbehaves${skipNote('redis-server')}`, () => {
  let server: RedisServer;
  let target: RedisTarget;
  beforeAll(async () => {
    server = await startRedis({ user: USER });
    target = { url: `redis://${USER.name}@127.0.0.1:${server.port}`, mode: 'standalone', password: USER.password };
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('connects only when needed or used, and closes the connection once its idle time has passed', async () => {
    // The store's clock moves only when told: the connection is closed by the idle time passing, never by a late machine.
    const clock = new FakeClock(Date.now());
    const { store, cred } = await open(target, { idleMs: 1_500, clock });
    const closedOnceIdle = (): Promise<void> =>
      pollUntil(
        async () => {
          await clock.advance(1_500);
          return (await connections(server)) === 0;
        },
        { timeoutMs: HUNG_MS },
      );
    expect(await connections(server)).toBe(0);
    store.need();
    await pollUntil(async () => (await connections(server)) === 1, { timeoutMs: HUNG_MS });
    // The connection made ahead of need serves the first operation: no second one.
    expect((await cred.read()).kind).toBe('miss');
    expect(await connections(server)).toBe(1);
    await closedOnceIdle();
    expect((await cred.read()).kind).toBe('miss');
    expect(await connections(server)).toBe(1);
    await closedOnceIdle();
  });

  it('ends an operation as a timeout when the store accepts and never answers, then refuses at once, without the store, while it counts as down', async () => {
    const hole = await blackHole();
    try {
      for (const password of [USER.password, undefined]) {
        const { store, cred, log } = await open(
          { url: `redis://127.0.0.1:${hole.port}`, mode: 'standalone', password },
          { timeoutMs: TIMEOUT_MS },
        );
        expect(await cred.read()).toMatchObject({
          kind: 'unavailable',
          reason: 'timeout',
          detail: `the token store did not answer within TOKEN_STORE_TIMEOUT_MS (${TIMEOUT_MS} ms)`,
        });
        // Down: the next operation is refused without a connection or a command.
        expect(await cred.takeLease()).toMatchObject({ kind: 'unavailable', reason: 'down' });
        expect(store.up).toBe(false);
        expect(log.at('warn')).toHaveLength(1);
      }
      expect(hole.connections()).toBeGreaterThan(0);
    } finally {
      await hole.close();
    }
  });

  it('bounds an operation as a whole by the store timeout when each step of it answers within it', async () => {
    // On the store's clock, each answer comes after 90 % of the timeout: AUTH and SELECT take
    // 180 % together, so the operation ends as a timeout before its command is answered, whose
    // steps each came in time. The client's own timeouts (the same setting, on the real clock)
    // are far off: a loaded machine cannot end a step first.
    const timeoutMs = HUNG_MS;
    const clock = new FakeClock(Date.now());
    const held = await heldStore();
    try {
      const { cred } = await open(
        { url: `redis://127.0.0.1:${held.port}/1`, mode: 'standalone', password: USER.password },
        { timeoutMs, clock },
      );
      const read = cred.read();
      await held.received('AUTH');
      await clock.advance(timeoutMs * 0.9);
      held.answer();
      await held.received('SELECT');
      await clock.advance(timeoutMs * 0.9);
      expect(await read).toMatchObject({ kind: 'unavailable', reason: 'timeout' });
      // The command itself was never sent (an AUTH after these is the background check's, on a new connection).
      expect(held.commands.slice(0, 2)).toEqual(['AUTH', 'SELECT']);
      expect(held.commands.filter((c) => c.startsWith('EVAL'))).toEqual([]);
    } finally {
      await held.close();
    }
  });

  it('drops a connection made ahead of need that does not come up within the store timeout', async () => {
    const hole = await blackHole();
    try {
      // The store's clock stands still: its idle close cannot be what ends the connection.
      const { store } = await open(
        { url: `redis://127.0.0.1:${hole.port}`, mode: 'standalone', password: USER.password },
        { timeoutMs: TIMEOUT_MS, clock: new FakeClock(Date.now()) },
      );
      store.need();
      await pollUntil(() => hole.connections() === 1, { timeoutMs: HUNG_MS });
      await pollUntil(() => hole.open() === 0, { timeoutMs: HUNG_MS });
    } finally {
      await hole.close();
    }
  });

  it('answers when nothing listens, naming TOKEN_STORE_URL, as an error rather than a timeout', async () => {
    const { cred } = await open(
      { url: `redis://127.0.0.1:${await closedPort()}`, mode: 'standalone', password: undefined },
      { timeoutMs: TIMEOUT_MS },
    );
    expect(await cred.read()).toMatchObject({
      kind: 'unavailable',
      reason: 'error',
      detail: expect.stringMatching(/ECONNREFUSED.*TOKEN_STORE_URL/),
    });
  });

  it('logs a refused password at error naming the setting that holds it, never the password', async () => {
    for (const [setting, wrong, url] of [
      ['TOKEN_STORE_PASSWORD_FILE', 'wrong-password-from-the-file', `redis://${USER.name}@127.0.0.1:${server.port}`],
      ['TOKEN_STORE_URL', 'wrong-password-in-the-url', `redis://${USER.name}:wrong-password-in-the-url@127.0.0.1:${server.port}`],
    ] as const) {
      const { cred, log } = await open({ url, mode: 'standalone', password: setting === 'TOKEN_STORE_URL' ? undefined : wrong });
      expect(await cred.read()).toMatchObject({ kind: 'unavailable', reason: 'error', detail: expect.stringContaining('WRONGPASS') });
      expect(log.at('error')).toHaveLength(1);
      expect((log.at('error')[0]!.obj as { detail: string }).detail).toContain(`the password in ${setting}`);
      expect(log.text()).not.toContain(wrong);
    }
  });

  it('counts a store without the function library TOKEN_STORE_SCRIPTS=functions calls as unusable, naming how to load it', async () => {
    await server.cli('ACL', 'SETUSER', USER.name, '+fcall');
    const { store, cred, log } = await open({ ...target, scripts: 'functions' });
    expect(await cred.read()).toMatchObject({ kind: 'unavailable', detail: expect.stringContaining('store-functions') });
    expect(store.up).toBe(false);
    expect((log.at('error')[0]!.obj as { detail: string }).detail).toContain('TOKEN_STORE_SCRIPTS=functions');
    expect(await store.probe()).toMatchObject({ kind: 'unavailable', detail: expect.stringContaining('function library') });
    await server.cli('ACL', 'SETUSER', USER.name, '-fcall');
  });

  it('asks for a password, naming TOKEN_STORE_PASSWORD_FILE, when none is given and the store wants one', async () => {
    const { cred, log } = await open({ ...target, url: `redis://127.0.0.1:${server.port}`, password: undefined });
    expect(await cred.read()).toMatchObject({
      kind: 'unavailable',
      detail: expect.stringMatching(/NOAUTH.*set TOKEN_STORE_PASSWORD_FILE/),
    });
    expect(log.at('error')).toHaveLength(1);
  });

  it('never runs a command as the default user after its password is refused, even where the default user is open', async () => {
    const open_ = await startRedis({ user: USER, openDefaultUser: true });
    try {
      const { cred } = await open({ url: `redis://${USER.name}@127.0.0.1:${open_.port}`, mode: 'standalone', password: 'wrong' });
      expect(await cred.write(token())).toMatchObject({ kind: 'unavailable', detail: expect.stringContaining('WRONGPASS') });
      expect(await open_.cli('DBSIZE')).toBe('0');
    } finally {
      await open_.stop();
    }
  });

  it('shares again by itself after the store is killed and restarted on its port', async () => {
    const own = await startRedis({ user: USER });
    try {
      const ownTarget: RedisTarget = { ...target, url: `redis://${USER.name}@127.0.0.1:${own.port}` };
      const { store, cred, log } = await open(ownTarget);
      expect(await cred.write(token())).toEqual({ kind: 'written' });
      await own.kill();
      expect(await cred.read()).toMatchObject({ kind: 'unavailable' });
      expect(store.up).toBe(false);
      await own.restart();
      await untilUp(store);
      // The check that found it kept no connection.
      await pollUntil(async () => (await connections(own)) === 0, { timeoutMs: HUNG_MS });
      // Restarted empty: a miss, and a write shares again.
      expect(await cred.read()).toMatchObject({ kind: 'miss', invalid: false });
      expect(await cred.write(token())).toEqual({ kind: 'written' });
      expect(
        log.lines.map((l) => l.level),
        JSON.stringify(log.lines),
      ).toEqual(['warn', 'info']);
    } finally {
      await own.stop();
    }
  });

  it('gives up on a store that stops answering within the timeout, and finds it again when it answers', async () => {
    expect((await (await open(target)).cred.write(token())).kind).toBe('written');
    const { store, cred } = await open(target, { timeoutMs: TIMEOUT_MS });
    server.pause();
    try {
      expect(await cred.read()).toMatchObject({ kind: 'unavailable', reason: 'timeout' });
    } finally {
      server.resume();
    }
    await untilUp(store);
    expect((await cred.read()).kind).toBe('hit');
  });

  it('fails writes alone while the store is out of memory: reads are served', async () => {
    const { store, cred, log } = await open(target);
    const held = token();
    await cred.write(held);
    await server.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    await server.cli('CONFIG', 'SET', 'maxmemory', '1');
    try {
      expect(await cred.write({ ...token(), usableUntilMs: held.usableUntilMs + 1_000 })).toMatchObject({
        kind: 'unavailable',
        reason: 'error',
        detail: expect.stringContaining('OOM'),
      });
      expect(await cred.takeLease()).toMatchObject({ kind: 'unavailable', detail: expect.stringContaining('OOM') });
      expect(await cred.read()).toMatchObject({ kind: 'hit', token: held });
      expect(store.up).toBe(true);
      expect(log.at('warn')).toHaveLength(1);
    } finally {
      await server.cli('CONFIG', 'SET', 'maxmemory', '0');
    }
    expect(await cred.deleteIfSame(held.accessToken)).toEqual({ kind: 'deleted' });
  });

  it('reads from a replica after a failover, fails its writes, and writes again once a primary answers', async () => {
    const other = await startRedis({ user: USER });
    const replica = await startRedis({ user: USER });
    try {
      const replicaTarget: RedisTarget = { ...target, url: `redis://${USER.name}@127.0.0.1:${replica.port}` };
      const { cred } = await open(replicaTarget);
      await replica.cli('REPLICAOF', '127.0.0.1', String(other.port));
      await pollUntil(async () => (await replica.cli('INFO', 'replication')).includes('master_link_status:up'), { timeoutMs: 10_000 });
      expect(await cred.write(token())).toMatchObject({
        kind: 'unavailable',
        reason: 'error',
        detail: expect.stringContaining('READONLY'),
      });
      expect((await cred.read()).kind).toBe('miss');
      await replica.cli('REPLICAOF', 'NO', 'ONE');
      expect(await cred.write(token())).toEqual({ kind: 'written' });
    } finally {
      await other.stop();
      await replica.stop();
    }
  });

  it('reads an entry the store evicted as a plain miss', async () => {
    const { cred } = await open(target);
    await cred.write(token());
    const keys = (await server.cli('KEYS', `${PREFIX}*`)).split('\n').filter((k) => k.endsWith('}'));
    await server.cli('DEL', ...keys);
    expect(await cred.read()).toEqual({ kind: 'miss', invalid: false, failure: undefined });
  });

  it('logs at error, once, that the user may not use keys outside its prefix, and stays up', async () => {
    const log = new FakeLog();
    const store = openStore(target, 'elsewhere:', { timeoutMs: GENEROUS_MS, log });
    opened.push(store);
    const cred = await store.slot(CREDENTIAL);
    expect(await cred.read()).toMatchObject({ kind: 'unavailable', reason: 'error', detail: expect.stringMatching(/NOPERM.*ACL/) });
    expect(await cred.read()).toMatchObject({ kind: 'unavailable', reason: 'error' });
    expect(log.at('error')).toHaveLength(1);
    expect(store.up).toBe(true);
  });

  it('authenticates new connections with a rotated password', async () => {
    const own = await startRedis({ user: USER });
    try {
      const { store, cred } = await open({ ...target, url: `redis://${USER.name}@127.0.0.1:${own.port}` });
      expect((await cred.read()).kind).toBe('miss');
      await own.cli('ACL', 'SETUSER', USER.name, 'resetpass', '>rotated-password');
      await own.cli('CLIENT', 'KILL', 'USER', USER.name);
      expect(await cred.read()).toMatchObject({ kind: 'unavailable' });
      store.setPassword('rotated-password');
      await untilUp(store);
      expect((await cred.read()).kind).toBe('miss');
    } finally {
      await own.stop();
    }
  });
});

describe.skipIf(lacks('redis-server') || lacks('redis-cli'))(
  `a token store over TLS that does not verify${skipNote('redis-server')}`,
  () => {
    let server: RedisServer;
    let ca: Awaited<ReturnType<typeof createCa>>;
    let client: Awaited<ReturnType<typeof clientCert>>;
    beforeAll(async () => {
      ca = await createCa('Store Test CA');
      client = await clientCert(ca);
      server = await startRedis({ user: USER, tls: { ...(await localhostCert(ca)), ca: ca.cert, client } });
    });
    afterAll(async () => {
      await server?.stop();
    });
    const url = (): string => `rediss://${USER.name}@localhost:${server.port}`;

    it('refuses a server certificate no trusted CA signed, saying so and naming CA_FILE', async () => {
      const { cred, log } = await open({ url: url(), mode: 'standalone', password: USER.password, tls: { ...client } });
      expect(await cred.read()).toMatchObject({ kind: 'unavailable', detail: expect.stringMatching(/TLS.*CA_FILE/) });
      expect(log.at('error')).toHaveLength(1);
    });

    it('fails without a client certificate where the server asks for one', async () => {
      const { cred } = await open({ url: url(), mode: 'standalone', password: USER.password, tls: { ca: parseCaFile(ca.cert) } });
      expect(await cred.read()).toMatchObject({ kind: 'unavailable' });
    });

    it('works with the private CA and the client certificate', async () => {
      const { cred } = await open({
        url: url(),
        mode: 'standalone',
        password: USER.password,
        tls: { ca: parseCaFile(ca.cert), ...client },
      });
      expect(await cred.write(token())).toEqual({ kind: 'written' });
    });
  },
);

describe.skipIf(lacks('redis-server') || lacks('redis-cli'))(`a token store cluster that misbehaves${skipNote('redis-server')}`, () => {
  it('ends an operation as a timeout when every seed accepts and never answers', async () => {
    const holes = [await blackHole(), await blackHole()];
    try {
      const { cred } = await open(
        { url: holes.map((h) => `redis://127.0.0.1:${h.port}`).join(','), mode: 'cluster', password: 'x' },
        { timeoutMs: TIMEOUT_MS },
      );
      expect(await cred.read()).toMatchObject({
        kind: 'unavailable',
        reason: 'timeout',
        detail: `the token store did not answer within TOKEN_STORE_TIMEOUT_MS (${TIMEOUT_MS} ms)`,
      });
    } finally {
      await Promise.all(holes.map((h) => h.close()));
    }
  });

  it('counts a cluster as unusable while any one primary lacks the function library TOKEN_STORE_SCRIPTS=functions calls', async () => {
    const cluster = await startRedisCluster({ user: { ...USER, scripts: 'functions' } });
    try {
      for (const node of cluster.nodes) await node.cli('FUNCTION', 'LOAD', 'REPLACE', functionLibrary());
      const { store, log } = await open({
        url: cluster.nodes.map((n) => `redis://${USER.name}@127.0.0.1:${n.port}`).join(','),
        mode: 'cluster',
        password: USER.password,
        scripts: 'functions',
      });
      expect(await store.probe()).toEqual({ kind: 'ok' });
      // Each primary in turn without it: whichever it is, the store is not usable.
      for (const node of cluster.nodes) {
        await node.cli('FUNCTION', 'DELETE', LIBRARY_NAME);
        expect(await store.probe()).toMatchObject({ kind: 'unavailable', detail: expect.stringContaining('store-functions') });
        expect(store.up).toBe(false);
        await node.cli('FUNCTION', 'LOAD', 'REPLACE', functionLibrary());
        expect(await store.probe()).toEqual({ kind: 'ok' });
      }
      expect((log.at('error')[0]!.obj as { detail: string }).detail).toContain('TOKEN_STORE_SCRIPTS=functions');
    } finally {
      await cluster.stop();
    }
  });

  it('logs a refused password naming the setting, from every seed', async () => {
    const cluster = await startRedisCluster({ user: USER });
    try {
      const { cred, log } = await open({
        url: cluster.nodes.map((n) => `redis://${USER.name}@127.0.0.1:${n.port}`).join(','),
        mode: 'cluster',
        password: 'wrong-cluster-password',
      });
      expect(await cred.read()).toMatchObject({ kind: 'unavailable', detail: expect.stringContaining('TOKEN_STORE_PASSWORD_FILE') });
      expect(log.at('error')).toHaveLength(1);
      expect(log.text()).not.toContain('wrong-cluster-password');
    } finally {
      await cluster.stop();
    }
  });
});
