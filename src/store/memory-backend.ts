import type { Clock } from '../core/clock.js';
import type { BackendFailure, SlotKeys, RawRead, StoreBackend } from './backend.js';
import type { EntryFields } from './entry.js';
import { createSealedStore, type SealedStoreOptions } from './sealed-store.js';
import { STORE_VALUE_MAX_BYTES } from './scripts.js';
import type { TokenStore } from './contract.js';

/**
 * A fault the in-memory server plays, as a real one would show it: `unreachable` (connection
 * refused), `hang` (accepts and never answers), `wrongpass` (refuses the password), `oom` (writes
 * refused, reads served, as Redis at `maxmemory` with `noeviction`), `readonly` (a replica after a
 * failover: every write refused).
 */
export type MemoryFault = 'none' | 'unreachable' | 'hang' | 'wrongpass' | 'oom' | 'readonly';

type Value = string | Map<string, string>;

interface Slot {
  value: Value;
  expiresAt: number | undefined;
}

/** A failure the in-memory server answers with; {@link StoreBackend.explain} reads it back. */
class MemoryStoreFailure extends Error {
  constructor(readonly failure: BackendFailure) {
    super(failure.detail);
  }
}

const TIMED_OUT: BackendFailure = { problem: 'timeout', connection: true, severe: false, detail: 'the token store did not answer in time' };

const FAILURES: Record<Exclude<MemoryFault, 'none' | 'hang'>, BackendFailure> = {
  unreachable: {
    problem: 'ECONNREFUSED',
    connection: true,
    severe: false,
    detail: 'the token store refused the connection (ECONNREFUSED)',
  },
  wrongpass: { problem: 'auth', connection: true, severe: true, detail: 'the token store refused the password (WRONGPASS)' },
  oom: { problem: 'oom', connection: false, severe: false, detail: 'the token store is out of memory (OOM)' },
  readonly: { problem: 'readonly', connection: false, severe: false, detail: 'the token store is a read-only replica (READONLY)' },
};

/**
 * A store server in memory on a clock (the fake clock in unit tests, the simulated one of
 * `bench:fleet`): keys with times to live, and the primitives of the Redis scripts, with the same
 * answers. Cheap enough for ten thousand simulated sidecars sharing one; each takes its own
 * {@link MemoryStoreServer.backend}.
 */
export class MemoryStoreServer {
  /** The fault every client meets from now on. */
  fault: MemoryFault = 'none';
  /** Commands received, refused ones included (a script counts once), for the fleet simulation's figures. */
  commands = 0;
  /**
   * How long after its command each answer comes: a slow store. The command is carried out when
   * it comes; an answer due no sooner than the client's timeout fails with the timeout instead.
   */
  latencyMs = 0;
  private readonly data = new Map<string, Slot>();

  constructor(private readonly clock: Clock) {}

  /** Every live key with its value and time to live in ms (-1 without one), as a raw read of the store shows them. */
  dump(): { key: string; value: string | Record<string, string>; ttlMs: number }[] {
    return [...this.data.keys()].flatMap((key) => {
      const slot = this.slot(key);
      if (slot === undefined) return [];
      const value = typeof slot.value === 'string' ? slot.value : Object.fromEntries(slot.value);
      return [{ key, value, ttlMs: this.ttl(key) }];
    });
  }

  /** Sets a key as any client of the store could (garbage, a stray lease): a string or a hash, with or without a time to live. */
  put(key: string, value: string | Record<string, string>, ttlMs?: number): void {
    this.data.set(key, {
      value: typeof value === 'string' ? value : new Map(Object.entries(value)),
      expiresAt: ttlMs === undefined ? undefined : this.clock.now() + ttlMs,
    });
  }

  /**
   * A client of this server. A command the server does not answer (`hang`) fails after
   * `timeoutMs` on the server's clock, as the Redis client's own command timeout fails it.
   */
  backend(timeoutMs = 250): StoreBackend {
    const serve = <T>(kind: 'read' | 'write' | 'delete', fn: () => T): Promise<T> => {
      const fault = this.fault;
      this.commands++;
      if (fault === 'hang') {
        return new Promise<T>((_, reject) => {
          this.clock.setTimeout(() => reject(new MemoryStoreFailure(TIMED_OUT)), timeoutMs);
        });
      }
      if (fault === 'unreachable' || fault === 'wrongpass') return Promise.reject(new MemoryStoreFailure(FAILURES[fault]));
      // Redis refuses what may grow memory at maxmemory (DEL is allowed), and every write on a replica.
      if ((fault === 'oom' && kind === 'write') || (fault === 'readonly' && kind !== 'read')) {
        return Promise.reject(new MemoryStoreFailure(FAILURES[fault]));
      }
      let answer: Promise<T>;
      try {
        answer = Promise.resolve(fn());
      } catch (err) {
        answer = Promise.reject(err as Error);
      }
      const latency = this.latencyMs;
      if (latency === 0) return answer;
      // Handled when the answer is due (or never, past the timeout): not an unhandled rejection meanwhile.
      answer.catch(() => undefined);
      return new Promise<T>((resolve, reject) => {
        if (latency < timeoutMs) this.clock.setTimeout(() => answer.then(resolve, reject), latency);
        else this.clock.setTimeout(() => reject(new MemoryStoreFailure(TIMED_OUT)), timeoutMs);
      });
    };
    return {
      read: (keys) => serve('read', () => this.read(keys)),
      // Refused at maxmemory only when it would write: keeping an entry deletes, and deletes pass.
      write: (keys, fields, ttlMs, replaceCt) => serve('delete', () => this.write(keys, fields, ttlMs(), replaceCt)),
      acquire: (leaseKey, value, ttlMs, limitMs) => serve('write', () => this.acquire(leaseKey, value, ttlMs, limitMs)),
      release: (leaseKey, value) => serve('delete', () => this.string(leaseKey) === value && this.data.delete(leaseKey)),
      deleteIf: (entryKey, fingerprint) =>
        serve('delete', () => this.hash(entryKey)?.get('fp') === fingerprint && this.data.delete(entryKey)),
      recordFailure: (failureKey, value, ttlMs) => serve('write', () => void this.put(failureKey, value, ttlMs)),
      cutFailure: (failureKey, limitMs) => serve('delete', () => this.cut(failureKey, limitMs)),
      ping: () => serve('read', () => undefined),
      warm: () => undefined,
      reset: () => undefined,
      close: () => Promise.resolve(),
      explain: (err) =>
        err instanceof MemoryStoreFailure
          ? err.failure
          : { problem: 'error', connection: false, severe: false, detail: `the token store failed: ${(err as Error).message}` },
    };
  }

  private slot(key: string): Slot | undefined {
    const slot = this.data.get(key);
    if (slot !== undefined && slot.expiresAt !== undefined && slot.expiresAt <= this.clock.now()) {
      this.data.delete(key);
      return undefined;
    }
    return slot;
  }

  private ttl(key: string): number {
    const slot = this.slot(key);
    if (slot === undefined) return -2;
    return slot.expiresAt === undefined ? -1 : slot.expiresAt - this.clock.now();
  }

  private string(key: string): string | undefined {
    const value = this.slot(key)?.value;
    return typeof value === 'string' ? value : undefined;
  }

  private hash(key: string): Map<string, string> | undefined {
    const value = this.slot(key)?.value;
    return typeof value === 'string' ? undefined : value;
  }

  private read(keys: SlotKeys): RawRead {
    const slot = this.slot(keys.entryKey);
    // As the read script: a value longer than any proxy writes is garbage, never handed on.
    const entry =
      slot === undefined
        ? undefined
        : typeof slot.value === 'string' || oversized(slot.value)
          ? ('garbage' as const)
          : { exp: slot.value.get('exp'), fp: slot.value.get('fp'), ct: slot.value.get('ct') };
    const failure = this.string(keys.failureKey);
    return {
      entry,
      entryTtlMs: this.ttl(keys.entryKey),
      failure: failure !== undefined && failure.length > STORE_VALUE_MAX_BYTES ? 'oversized' : failure,
      failureTtlMs: this.ttl(keys.failureKey),
    };
  }

  private write(keys: SlotKeys, fields: EntryFields, ttlMs: number, replaceCt: string | undefined): boolean {
    const current = this.slot(keys.entryKey);
    this.data.delete(keys.failureKey);
    if (current !== undefined && typeof current.value !== 'string') {
      const { value } = current;
      const exp = value.get('exp');
      const sound = exp !== undefined && /^\d{1,20}$/.test(exp) && !!value.get('fp') && !!value.get('ct') && !oversized(value);
      if (sound && Number(exp) >= Number(fields.exp) && (replaceCt === undefined || value.get('ct') !== replaceCt)) return false;
    }
    if (this.fault === 'oom') throw new MemoryStoreFailure(FAILURES.oom);
    this.put(keys.entryKey, { ...fields }, ttlMs);
    return true;
  }

  /** As the cut script: a time to live longer than the limit is cut to it; none is left alone. */
  private cut(key: string, limitMs: number): boolean {
    const slot = this.slot(key);
    if (slot?.expiresAt === undefined || slot.expiresAt - this.clock.now() <= limitMs) return false;
    slot.expiresAt = this.clock.now() + limitMs;
    return true;
  }

  private acquire(leaseKey: string, value: string, ttlMs: number, limitMs: number): 'acquired' | 'taken' | 'cut' {
    const current = this.slot(leaseKey);
    if (current === undefined) {
      this.put(leaseKey, value, ttlMs);
      return 'acquired';
    }
    const now = this.clock.now();
    if (current.expiresAt === undefined || current.expiresAt - now > limitMs) {
      current.expiresAt = now + ttlMs;
      return 'cut';
    }
    return 'taken';
  }
}

/**
 * A {@link TokenStore} on a {@link MemoryStoreServer}: one per simulated proxy, all on one server.
 * Its operations answer at once, or as the server's fault says.
 */
export function createMemoryTokenStore(
  options: Omit<SealedStoreOptions, 'backend' | 'where' | 'prefix' | 'timeoutMs'> & {
    server: MemoryStoreServer;
    prefix?: string;
    timeoutMs?: number;
  },
): TokenStore {
  const { server, ...rest } = options;
  const timeoutMs = options.timeoutMs ?? 250;
  return createSealedStore({ prefix: 'ticket-auth-proxy:', ...rest, timeoutMs, backend: server.backend(timeoutMs), where: 'memory' });
}

/** A hash with a field longer than any proxy writes (the scripts' rule, scripts.ts). */
function oversized(value: Map<string, string>): boolean {
  for (const field of ['exp', 'fp', 'ct']) if ((value.get(field)?.length ?? 0) > STORE_VALUE_MAX_BYTES) return true;
  return false;
}
