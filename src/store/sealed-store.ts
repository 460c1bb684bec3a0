import { randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { StoreBackend } from './backend.js';
import { openEntry, openFailure, sealEntry, sealFailure } from './entry.js';
import { StoreHealth, type Attempt } from './health.js';
import { deriveStoreKey, scryptDeriver, type KeyDeriver, type StoreKey } from './store-key.js';
import type {
  CredentialSlot,
  DeleteResult,
  LeaseResult,
  ReadResult,
  RecordResult,
  FailureRecord,
  StoredToken,
  StoreOperation,
  StoreResult,
  StoreUnavailable,
  TokenStore,
  TokenStoreObserver,
  WriteResult,
} from './contract.js';

export interface SealedStoreOptions {
  backend: StoreBackend;
  /** `TOKEN_STORE_PREFIX`: every key begins with it. */
  prefix: string;
  /** `TOKEN_STORE_TIMEOUT_MS`. */
  timeoutMs: number;
  /** How long a lease lasts: `TOKEN_FETCH_TIMEOUT_MS` plus a second. */
  leaseMs: number;
  clock: Clock;
  /** Jitter of the background checks. */
  random: () => number;
  log: Log;
  observer?: TokenStoreObserver | undefined;
  /** The store as log lines name it (its URL without the password). */
  where: string;
  /** How store keys are derived; scrypt (one at a time) unless given. The fleet simulation shares one derivation. */
  derive?: KeyDeriver | undefined;
}

/**
 * The {@link TokenStore} over a backend's primitives (Redis, or the in-memory one): each
 * credential's slot named and sealed under its derived key, every operation bounded by the store
 * timeout, and the store's health.
 */
export function createSealedStore(options: SealedStoreOptions): TokenStore {
  const { backend, clock, observer } = options;
  const derive = options.derive ?? scryptDeriver();
  const health = new StoreHealth({
    backend,
    clock,
    random: options.random,
    timeoutMs: options.timeoutMs,
    log: options.log,
    observer,
    where: options.where,
  });
  return {
    async slot(input) {
      try {
        const key = await deriveStoreKey({ ...input, prefix: options.prefix, derive });
        return createSlot({ key, backend, health, clock, leaseMs: options.leaseMs, observer });
      } catch (err) {
        // scrypt refused (its memory, most likely): this credential works as without a store.
        const detail = `the token store key could not be derived (${(err as Error).message}): this credential does without the store`;
        options.log.error({ store: options.where }, detail);
        return unusableSlot({ kind: 'unavailable', reason: 'error', detail });
      }
    },
    need() {
      if (health.up) backend.warm();
    },
    get up() {
      return health.up;
    },
    probe: () => health.probe(),
    async close() {
      health.close();
      await backend.close();
    },
  };
}

export interface SlotOptions {
  key: StoreKey;
  backend: StoreBackend;
  health: StoreHealth;
  clock: Clock;
  /** How long a lease lasts: the token fetch timeout plus a second. */
  leaseMs: number;
  observer: TokenStoreObserver | undefined;
}

/** One credential's slot over the store's primitives: sealing, opening, counting. */
export function createSlot(options: SlotOptions): CredentialSlot {
  const { key, backend, health, clock, leaseMs, observer } = options;
  const count = (operation: StoreOperation, result: StoreResult): void => observer?.onOperation?.(operation, result);
  /** The `ct` of an entry a read found unusable: the next write replaces it whatever its `exp` says. */
  let garbageCt: string | undefined;

  function failed<T>(operation: StoreOperation, attempt: Attempt<T> & { ok: false }) {
    count(operation, attempt.result);
    return attempt.unavailable;
  }

  function sharedFailure(value: string | undefined, ttlMs: number, countedFrom: number): FailureRecord | undefined {
    // A record without a time to live, or one this key did not seal, is not one a proxy wrote.
    if (value === undefined || ttlMs <= 0) return undefined;
    const outcome = openFailure(key, value);
    return outcome === undefined ? undefined : { nextAttemptAtMs: countedFrom + ttlMs, outcome };
  }

  return {
    async read(): Promise<ReadResult> {
      // The times to live were counted by the store at some moment of the round trip: from its
      // start, they can only come out shorter than they are, never stretched by a slow answer.
      const sent = clock.now();
      const attempt = await health.run(() => backend.read(key));
      if (!attempt.ok) return failed('read', attempt);
      const raw = attempt.value;
      const now = clock.now();
      const failure = sharedFailure(raw.failure, raw.failureTtlMs, sent);
      if (raw.entry === undefined) {
        count('read', 'miss');
        return { kind: 'miss', invalid: false, failure };
      }
      const token = raw.entry === 'garbage' ? undefined : openEntry(key, raw.entry);
      if (token === undefined) {
        garbageCt = raw.entry === 'garbage' ? undefined : raw.entry.ct;
        count('read', 'invalid');
        return { kind: 'miss', invalid: true, failure };
      }
      // The lesser of the writer's last usable moment and the time to live the store counts.
      const remainingMs = Math.min(token.usableUntilMs - now, raw.entryTtlMs >= 0 ? raw.entryTtlMs : Infinity);
      if (remainingMs <= 0) {
        count('read', 'miss');
        return { kind: 'miss', invalid: false, failure };
      }
      count('read', 'hit');
      return { kind: 'hit', token, remainingMs, failure };
    },

    async write(token: StoredToken): Promise<WriteResult> {
      const ttlMs = Math.floor(token.usableUntilMs) - clock.now();
      if (ttlMs <= 0) return { kind: 'kept' };
      const fields = sealEntry(key, token);
      const attempt = await health.run(() => backend.write(key, fields, ttlMs, garbageCt));
      if (!attempt.ok) return failed('write', attempt);
      garbageCt = undefined;
      count('write', 'ok');
      return { kind: attempt.value ? 'written' : 'kept' };
    },

    async takeLease(): Promise<LeaseResult> {
      const value = randomBytes(16).toString('hex');
      const takenAt = clock.now();
      const attempt = await health.run(() => backend.acquire(key.leaseKey, value, leaseMs));
      if (!attempt.ok) return failed('lease', attempt);
      if (!attempt.value) {
        count('lease', 'taken');
        return { kind: 'taken' };
      }
      count('lease', 'ok');
      return {
        kind: 'acquired',
        lease: {
          expiresAtMs: takenAt + leaseMs,
          async release() {
            const released = await health.run(() => backend.release(key.leaseKey, value));
            if (!released.ok) return failed('lease', released);
            count('lease', 'ok');
            return { kind: released.value ? 'released' : 'lapsed' };
          },
        },
      };
    },

    async deleteIfSame(accessToken: string): Promise<DeleteResult> {
      const attempt = await health.run(() => backend.deleteIf(key.entryKey, key.fingerprint(accessToken)));
      if (!attempt.ok) return failed('delete', attempt);
      count('delete', 'ok');
      return { kind: attempt.value ? 'deleted' : 'kept' };
    },

    async recordFailure(failure: { nextAttemptAtMs: number; outcome: string }): Promise<RecordResult> {
      const ttlMs = Math.ceil(failure.nextAttemptAtMs - clock.now());
      if (ttlMs <= 0) return { kind: 'recorded' };
      const value = sealFailure(key, failure.outcome);
      const attempt = await health.run(() => backend.recordFailure(key.failureKey, value, ttlMs));
      if (!attempt.ok) return failed('write', attempt);
      count('write', 'ok');
      return { kind: 'recorded' };
    },
  };
}

/** A credential whose store key could not be derived: every operation answers `unavailable`. */
export function unusableSlot(unavailable: StoreUnavailable): CredentialSlot {
  const answer = (): Promise<StoreUnavailable> => Promise.resolve(unavailable);
  return { read: answer, write: answer, takeLease: answer, deleteIfSame: answer, recordFailure: answer };
}
