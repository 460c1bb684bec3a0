import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'iovalkey';
import type { Clock } from '../core/clock.js';
import type { TlsMaterial } from '../net/tls-material.js';
import type { RawRead, StoreBackend } from './backend.js';
import { CLOSED, explainRedisFailure, type PasswordSource } from './redis-failure.js';
import type { StoreEndpoint } from './redis-url.js';
import { FORMAT_VERSION } from './slot-key.js';
import { LIBRARY_NAME, LIBRARY_REVISION, SCRIPTS, VERSION_FUNCTION, functionName } from './scripts.js';

/** A connection unused this long is closed: a proxy needs the store about once a token lifetime. */
export const IDLE_CLOSE_MS = 30_000;

export interface RedisBackendOptions {
  endpoint: StoreEndpoint;
  /** The password in use now (`TOKEN_STORE_PASSWORD_FILE` is reread on change), and where it came from. */
  password: () => string | undefined;
  passwordSource: PasswordSource;
  /** The TLS material in use now (`CA_FILE` and the client certificate are reread on change). */
  tls: () => TlsMaterial;
  /**
   * `TOKEN_STORE_TIMEOUT_MS`: the bound of each operation as a whole, connecting and
   * authenticating included, and of a connection made ahead of need.
   */
  timeoutMs: number;
  clock: Clock;
  idleMs?: number | undefined;
  /** `TOKEN_STORE_SCRIPTS`: the scripts sent with `EVAL`/`EVALSHA`, or called with `FCALL` from the library an operator loaded. */
  scripts?: 'eval' | 'functions' | undefined;
}

type ScriptReply = [string, string | null, string | null, string | null, number, string | null, number];

/** The scripts as commands of a client (`defineCommand`: `EVALSHA`, then `EVAL` when the server lacks the script). */
interface Scripted {
  tapRead(entry: string, failure: string): Promise<ScriptReply>;
  tapWrite(entry: string, failure: string, exp: string, fp: string, ct: string, ttl: number, replace: string): Promise<number>;
  tapAcquire(lease: string, value: string, ttl: number, limit: number): Promise<number>;
  tapRelease(lease: string, value: string): Promise<number>;
  tapDeleteIf(entry: string, fp: string): Promise<number>;
  tapCutFailure(failure: string, limit: number): Promise<number>;
}

type Client = (Redis | Cluster) & Scripted;

/** What the library's module gives: its two client classes. */
interface Library {
  Redis: typeof Redis;
  Cluster: typeof Cluster;
}

/** A connection, and the promise of it being ready (connected, authenticated, its database selected). */
interface Connection {
  /** Made once the library has loaded. */
  client: Client | undefined;
  ready: Promise<Client>;
  /** The last error the library reported on its own (a refused connection, a refused password). */
  lastError: unknown;
  /** Dropped (timed out, closed) before or after it was made: never used again. */
  dropped: boolean;
}

/**
 * The store on Redis or Valkey, through `iovalkey`, loaded here and only here (a dynamic import:
 * a proxy without a store never loads it). The library starts loading at once, while the
 * credentials' keys are derived; the first operation waits for it before its time starts (loading
 * is this process's own work, done once: on a tenth of a core it takes about half a second, which
 * the store has no part in). Connects when an operation needs it and closes after
 * {@link IDLE_CLOSE_MS} unused; nothing reconnects, queues (the offline queue is off) or retries on
 * its own: an operation that finds no connection makes one. Each operation, connecting and
 * authenticating included, is bounded by the store timeout ({@link deadline}); the library's own
 * timeouts are backstops well past it.
 */
export function createRedisBackend(options: RedisBackendOptions): StoreBackend {
  const library: Promise<Library> = import('iovalkey');
  // A failure to load shows in the first operation; not an unhandled rejection before it.
  library.catch(() => undefined);
  const { endpoint, clock, timeoutMs } = options;
  const idleMs = options.idleMs ?? IDLE_CLOSE_MS;
  let current: Connection | undefined;
  let inFlight = 0;
  let idleTimer: unknown;
  let closed = false;

  function tlsOptions(): object | undefined {
    if (!endpoint.tls) return undefined;
    const { ca, cert, key } = options.tls();
    return { ...(ca ? { ca: [...ca] } : {}), ...(cert && key ? { cert, key } : {}) };
  }

  // The library's own timeouts run on timers of their own, which fire before an answer that came
  // meanwhile is read when the process has been held off the CPU (a CPU limit): a refused password
  // would read as a timeout. They are backstops only; the store timeout is this file's deadline.
  const backstopMs = 4 * timeoutMs;
  // Every automatic behaviour off: no offline queue, no reconnection, no retry, no ready check
  // (`INFO` is not among the commands a user limited to the prefix may run).
  const common = {
    lazyConnect: true,
    enableOfflineQueue: false,
    enableReadyCheck: false,
    connectTimeout: backstopMs,
    commandTimeout: backstopMs,
    // A closed connection's socket is destroyed this long after its FIN, answered or not.
    disconnectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    autoResubscribe: false,
    autoResendUnfulfilledCommands: false,
  } satisfies RedisOptions;

  function create(lib: Library): Client {
    const tls = tlsOptions();
    let client: Client;
    if (endpoint.mode === 'cluster') {
      const password = options.password();
      const clusterOptions: ClusterOptions = {
        lazyConnect: true,
        enableOfflineQueue: false,
        enableReadyCheck: false,
        clusterRetryStrategy: () => null,
        slotsRefreshTimeout: backstopMs,
        slotsRefreshInterval: 0,
        maxRedirections: 4,
        retryDelayOnFailover: 50,
        retryDelayOnClusterDown: 50,
        retryDelayOnTryAgain: 50,
        // Connect by the names given, so TLS verifies the certificate against them.
        dnsLookup: (address, callback) => callback(null, address),
        redisOptions: {
          ...common,
          ...(endpoint.username !== undefined ? { username: endpoint.username } : {}),
          ...(password !== undefined ? { password } : {}),
          ...(tls ? { tls } : {}),
        },
      };
      client = new lib.Cluster(
        endpoint.nodes.map((n) => ({ host: n.host, port: n.port })),
        clusterOptions,
      ) as Client;
    } else {
      const node = endpoint.nodes[0]!;
      client = new lib.Redis({ ...common, host: node.host, port: node.port, retryStrategy: () => null, ...(tls ? { tls } : {}) }) as Client;
    }
    for (const [command, script] of Object.entries(SCRIPTS)) {
      if (options.scripts !== 'functions') client.defineCommand(command, { numberOfKeys: script.keys, lua: script.lua });
      else {
        const name = functionName(script.name);
        const call = (...args: (string | number)[]): Promise<unknown> => client.call('FCALL', name, script.keys, ...args);
        Object.defineProperty(client, command, { value: call });
      }
    }
    return client;
  }

  function open(lib: Library): Connection {
    const connection: Connection = { client: undefined, ready: Promise.resolve(undefined as never), lastError: undefined, dropped: false };
    // The most telling error: "Failed to refresh slots cache" follows the refused password it
    // hides, and a refusal already received tells more than a timeout that came after it.
    const remember = (err: unknown): void => {
      if (err instanceof Error && CLOSED.test(err.message)) return;
      if (connection.lastError !== undefined && isTimeout(err)) return;
      connection.lastError = err;
    };
    connection.ready = (async () => {
      const client = create(lib);
      connection.client = client;
      client.on('error', remember);
      client.on('node error', remember);
      client.on('end', () => {
        if (current === connection) current = undefined;
      });
      if (connection.dropped) throw new Error('Connection is closed.');
      await client.connect();
      if (endpoint.mode === 'standalone') {
        // Authenticated here rather than by the library, which sends AUTH without waiting for its
        // answer: a refused password must fail the operation, not let it run as the default user.
        const password = options.password();
        if (password !== undefined) {
          await client.call('AUTH', ...(endpoint.username !== undefined ? [endpoint.username, password] : [password]));
        }
        if (endpoint.db !== 0) await client.call('SELECT', endpoint.db);
      }
      // The library this proxy calls, of the key format it writes and of this release's scripts,
      // on every primary: a library loaded from an earlier release is refused, never used.
      if (options.scripts === 'functions') await checkLibrary(endpoint.mode === 'cluster' ? (client as Cluster).nodes('master') : [client]);
      return client;
    })();
    connection.ready.catch(() => drop(connection));
    return connection;
  }

  function drop(connection: Connection | undefined): void {
    if (connection === undefined) return;
    if (current === connection) {
      current = undefined;
      stopIdleTimer();
    }
    connection.dropped = true;
    connection.client?.disconnect();
  }

  /**
   * A promise that rejects as a timeout `timeoutMs` from now, unless `stop` is called first. When
   * its timer fires, what has already arrived on the sockets is read first (one turn of the event
   * loop): held off the CPU past the deadline, a process runs its timers before it reads, and an
   * answer that came in time (a refused password) would otherwise lose to the timeout.
   */
  function deadline(): { expired: Promise<never>; stop(): void } {
    let timer: unknown;
    let immediate: NodeJS.Immediate | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = clock.setTimeout(() => {
        immediate = setImmediate(() => reject(new Error(`Command timed out: the operation took more than ${timeoutMs} ms`)));
      }, timeoutMs);
    });
    // Raced, or dropped unraced: never an unhandled rejection.
    expired.catch(() => undefined);
    return {
      expired,
      stop() {
        clock.clearTimeout(timer);
        if (immediate !== undefined) clearImmediate(immediate);
      },
    };
  }

  /**
   * Runs `command` on the connection, made first if there is none. A store that answered each step
   * (connecting, `AUTH`, `SELECT`, the command) just in time could take several times the store
   * timeout: the operation as a whole is bounded by it here, from the moment the client library is
   * loaded, and one that passes it fails as a timeout.
   */
  async function use<T>(command: (client: Client) => Promise<T>): Promise<T> {
    if (closed) throw new Error('the token store is closed');
    const lib = await library;
    if (closed) throw new Error('the token store is closed');
    const connection = (current ??= open(lib));
    inFlight++;
    stopIdleTimer();
    const bound = deadline();
    try {
      // The race handles a late rejection of the command, after the deadline.
      return await Promise.race([connection.ready.then(command), bound.expired]);
    } catch (err) {
      // The library rejects with "Connection is closed"; what closed it came as an event before.
      const cause = err instanceof Error && CLOSED.test(err.message) && connection.lastError !== undefined ? connection.lastError : err;
      // A replica after a failover, or a server still loading: a new connection may reach the new primary.
      if (cause instanceof Error && /^(READONLY|LOADING|MASTERDOWN)\b/.test(cause.message)) drop(connection);
      throw cause;
    } finally {
      bound.stop();
      inFlight--;
      closeWhenIdle();
    }
  }

  /** Asks each node for the library's version and revision; throws when one lacks it or holds another. */
  async function checkLibrary(nodes: (Redis | Cluster)[]): Promise<void> {
    await Promise.all(
      nodes.map(async (node) => {
        const answer = await node.call('FCALL', VERSION_FUNCTION, 0);
        // Revision 1 answered its version alone.
        const [version, revision] = Array.isArray(answer) ? (answer as unknown[]) : [answer, 1];
        if (version !== FORMAT_VERSION) throw new Error(`Function library ${LIBRARY_NAME} answers version ${String(version)}`);
        if (revision !== LIBRARY_REVISION) {
          throw new Error(
            `Function library ${LIBRARY_NAME} is revision ${String(revision)}; this proxy calls revision ${LIBRARY_REVISION}`,
          );
        }
      }),
    );
  }

  function closeWhenIdle(): void {
    if (inFlight > 0) return;
    stopIdleTimer();
    idleTimer = clock.setTimeout(() => {
      idleTimer = undefined;
      if (inFlight === 0) drop(current);
    }, idleMs);
  }

  /** The idle timer, if one runs, stops: a connection in use, dropped or closed is not closed by it. */
  function stopIdleTimer(): void {
    if (idleTimer === undefined) return;
    clock.clearTimeout(idleTimer);
    idleTimer = undefined;
  }

  const ttl = (n: number): number => Math.max(1, Math.ceil(n));

  return {
    read: (keys) =>
      use(async (c): Promise<RawRead> => {
        const [type, exp, fp, ct, entryTtlMs, failure, failureTtlMs] = await c.tapRead(keys.entryKey, keys.failureKey);
        const entry =
          type === 'none' ? undefined : type === 'hash' ? { exp: exp ?? undefined, fp: fp ?? undefined, ct: ct ?? undefined } : 'garbage';
        return { entry, entryTtlMs, failure: failure ?? undefined, failureTtlMs };
      }),
    write: (keys, f, ttlMs, replaceCt) =>
      use(async (c) => (await c.tapWrite(keys.entryKey, keys.failureKey, f.exp, f.fp, f.ct, ttl(ttlMs()), replaceCt ?? '')) === 1),
    acquire: (leaseKey, value, ttlMs, limitMs) =>
      use(async (c) => {
        const taken = await c.tapAcquire(leaseKey, value, ttl(ttlMs), limitMs);
        return taken === 1 ? 'acquired' : taken === 2 ? 'cut' : 'taken';
      }),
    release: (leaseKey, value) => use(async (c) => (await c.tapRelease(leaseKey, value)) === 1),
    deleteIf: (entryKey, fingerprint) => use(async (c) => (await c.tapDeleteIf(entryKey, fingerprint)) === 1),
    cutFailure: (failureKey, limitMs) => use(async (c) => (await c.tapCutFailure(failureKey, ttl(limitMs))) === 1),
    recordFailure: (failureKey, value, ttlMs) =>
      use(async (c) => {
        await c.set(failureKey, value, 'PX', ttl(ttlMs));
      }),
    async ping() {
      await use(async (c) => {
        // A cluster: its slots were read on connecting, and one primary answering says it is
        // reachable; with TOKEN_STORE_SCRIPTS=functions every primary is asked, as each must hold the library.
        const primaries = endpoint.mode === 'cluster' ? (c as Cluster).nodes('master') : [c as Redis];
        // The library may have been deleted or replaced since the connection checked it.
        if (options.scripts === 'functions') await checkLibrary(primaries);
        else await primaries[0]!.ping();
      });
      // A check keeps no connection: a fleet finding its store again does not hold one each.
      if (inFlight === 0) drop(current);
    },
    warm() {
      if (current !== undefined || closed) return;
      void library.then(
        (lib) => {
          if (current !== undefined || closed) return;
          // Bounded by the store timeout, as an operation is, unless an operation has joined it
          // meanwhile: that operation's own deadline bounds it then (a connection made while a
          // key is derived on a tenth of a core is slow, and need not fail the read that waits on
          // it). A connection that fails is dropped with its promise.
          const connection = (current = open(lib));
          const bound = deadline();
          bound.expired.catch(() => {
            if (inFlight === 0) drop(connection);
          });
          connection.ready.then(
            () => {
              bound.stop();
              closeWhenIdle();
            },
            () => bound.stop(),
          );
        },
        () => undefined,
      );
    },
    reset() {
      drop(current);
    },
    async close() {
      closed = true;
      stopIdleTimer();
      drop(current);
    },
    explain: (err) => explainRedisFailure(err, endpoint.shown, options.passwordSource, options.password()),
  };
}

/** The library's own timeouts and ours, as their errors read. */
function isTimeout(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return message.startsWith('Command timed out') || message === 'timeout' || (err as { code?: unknown } | null)?.code === 'ETIMEDOUT';
}
