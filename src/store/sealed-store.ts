import { randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { StoreBackend } from './backend.js';
import { openEntry, openFailure, sealEntry, sealFailure } from './entry.js';
import { StoreHealth, type Attempt } from './health.js';
import { deriveSlotKey, scryptDeriver, type KeyDeriver, type SlotKey } from './slot-key.js';
import {
  LEASE_LIMIT_MS,
  type AnomalyKind,
  type Slot,
  type DeleteResult,
  type LeaseResult,
  type ReadResult,
  type RecordResult,
  type FailureRecord,
  type StoredToken,
  type StoreOperation,
  type StoreResult,
  type StoreUnavailable,
  type TokenStore,
  type TokenStoreObserver,
  type WriteResult,
} from './contract.js';

/** An anomaly of one kind is logged at most this often (every one is counted). */
export const ANOMALY_LOG_INTERVAL_MS = 10 * 60_000;

/** What each anomaly means, for the log line; never a key or a value. */
const ANOMALY_MESSAGES: Readonly<Record<AnomalyKind, string>> = {
  lease_too_long: 'token store: a lease outlived what any proxy takes; cut to this proxy’s lease length (someone else writes the prefix)',
  lease_wait_exhausted:
    'token store: waited a whole lease length while leases kept being taken; fetching alone (someone else may write the prefix)',
  failure_too_long:
    'token store: a failure record asked for a longer wait, or was kept longer, than this proxy’s own backoff gives; ' +
    'honoured only as long as that, and cut to it',
  invalid_entry: 'token store: an entry does not decrypt or parse; never served, replaced by the next fetch',
  invalid_failure: 'token store: a failure record does not decrypt or parse, or has no time to live; ignored, replaced by the next write',
};

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
  const warnedAt = new Map<AnomalyKind, number>();
  /** Counted every time, logged once per kind per {@link ANOMALY_LOG_INTERVAL_MS}: a writer of the prefix floods no log. */
  const anomaly = (kind: AnomalyKind): void => {
    observer?.onAnomaly?.(kind);
    const now = clock.now();
    const last = warnedAt.get(kind);
    if (last !== undefined && now - last < ANOMALY_LOG_INTERVAL_MS) return;
    warnedAt.set(kind, now);
    options.log.warn({ store: options.where, kind }, ANOMALY_MESSAGES[kind]);
  };
  return {
    async slot(input) {
      try {
        const key = await deriveSlotKey({ ...input, prefix: options.prefix, derive });
        return createSlot({ key, backend, health, clock, leaseMs: options.leaseMs, observer, anomaly });
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
    anomaly,
    probe: () => health.probe(),
    async close() {
      health.close();
      await backend.close();
    },
  };
}

export interface SlotOptions {
  key: SlotKey;
  backend: StoreBackend;
  health: StoreHealth;
  clock: Clock;
  /** How long a lease lasts: the token fetch timeout plus a second. */
  leaseMs: number;
  observer: TokenStoreObserver | undefined;
  /** Counts and logs an anomaly (the store's {@link TokenStore.anomaly}). */
  anomaly: (kind: AnomalyKind) => void;
}

/** One credential's slot over the store's primitives: sealing, opening, counting. */
export function createSlot(options: SlotOptions): Slot {
  const { key, backend, health, clock, leaseMs, observer, anomaly } = options;
  const count = (operation: StoreOperation, result: StoreResult): void => observer?.onOperation?.(operation, result);
  /** The `ct` of an entry a read found unusable: the next write replaces it whatever its `exp` says. */
  let garbageCt: string | undefined;

  function failed<T>(operation: StoreOperation, attempt: Attempt<T> & { ok: false }) {
    count(operation, attempt.result);
    return attempt.unavailable;
  }

  function failureRecord(value: string | undefined, ttlMs: number, countedFrom: number): FailureRecord | undefined {
    // A record expiring as it was read is gone. One without a time to live is not one a proxy
    // wrote, nor one this key did not seal: either is ignored, and counted.
    if (value === undefined || ttlMs === 0) return undefined;
    const sealed = ttlMs < 0 ? undefined : openFailure(key, value);
    if (sealed === undefined) {
      anomaly('invalid_failure');
      return undefined;
    }
    // The lesser of the sealed time and the time to live the store counts: a replayed record, or
    // one whose time to live was stretched, asks for no wait past what its writer sealed.
    const nextAttemptAtMs = Math.min(sealed.nextAttemptAtMs, countedFrom + ttlMs);
    return { nextAttemptAtMs, sealedAtMs: sealed.nextAttemptAtMs, outcome: sealed.outcome, keptUntilMs: countedFrom + ttlMs };
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
      const failure = failureRecord(raw.failure, raw.failureTtlMs, sent);
      if (raw.entry === undefined) {
        count('read', 'miss');
        return { kind: 'miss', invalid: false, failure };
      }
      const token = raw.entry === 'garbage' ? undefined : openEntry(key, raw.entry);
      if (token === undefined) {
        garbageCt = raw.entry === 'garbage' ? undefined : raw.entry.ct;
        count('read', 'invalid');
        anomaly('invalid_entry');
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
      const ttl = (): number => Math.floor(token.usableUntilMs) - clock.now();
      const attempt = await health.run(() => backend.write(key, fields, ttl, garbageCt));
      if (!attempt.ok) return failed('write', attempt);
      garbageCt = undefined;
      count('write', 'ok');
      return { kind: attempt.value ? 'written' : 'kept' };
    },

    async takeLease(): Promise<LeaseResult> {
      const value = randomBytes(16).toString('hex');
      const takenAt = clock.now();
      const attempt = await health.run(() => backend.acquire(key.leaseKey, value, leaseMs, LEASE_LIMIT_MS));
      if (!attempt.ok) return failed('lease', attempt);
      if (attempt.value !== 'acquired') {
        if (attempt.value === 'cut') anomaly('lease_too_long');
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
      const value = sealFailure(key, failure);
      const attempt = await health.run(() => backend.recordFailure(key.failureKey, value, ttlMs));
      if (!attempt.ok) return failed('write', attempt);
      count('write', 'ok');
      return { kind: 'recorded' };
    },

    async cutFailure(limitMs: number) {
      anomaly('failure_too_long');
      const attempt = await health.run(() => backend.cutFailure(key.failureKey, limitMs));
      if (!attempt.ok) return failed('write', attempt);
      count('write', 'ok');
      return { kind: attempt.value ? ('cut' as const) : ('kept' as const) };
    },
  };
}

/** A credential whose store key could not be derived: every operation answers `unavailable`. */
export function unusableSlot(unavailable: StoreUnavailable): Slot {
  const answer = (): Promise<StoreUnavailable> => Promise.resolve(unavailable);
  return { read: answer, write: answer, takeLease: answer, deleteIfSame: answer, recordFailure: answer, cutFailure: answer };
}
