import { randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import type { StoreBackend } from './backend.js';
import { openEntry, openFailure, sealEntry, sealFailure } from './entry.js';
import type { Attempt, StoreHealth } from './health.js';
import type { StoreKey } from './store-key.js';
import type {
  CredentialStore,
  DeleteResult,
  LeaseResult,
  ReadResult,
  RecordResult,
  SharedFailure,
  StoredToken,
  StoreOperation,
  StoreResult,
  StoreUnavailable,
  TokenStoreObserver,
  WriteResult,
} from './token-store.js';

export interface CredentialStoreOptions {
  key: StoreKey;
  backend: StoreBackend;
  health: StoreHealth;
  clock: Clock;
  /** How long a lease lasts: the token fetch timeout plus a second. */
  leaseMs: number;
  observer: TokenStoreObserver | undefined;
}

/** One credential's operations over the store's primitives: sealing, opening, counting. */
export function createCredentialStore(options: CredentialStoreOptions): CredentialStore {
  const { key, backend, health, clock, leaseMs, observer } = options;
  const count = (operation: StoreOperation, result: StoreResult): void => observer?.onOperation?.(operation, result);
  /** The `ct` of an entry a read found unusable: the next write replaces it whatever its `exp` says. */
  let garbageCt: string | undefined;

  function failed<T>(operation: StoreOperation, attempt: Attempt<T> & { ok: false }) {
    count(operation, attempt.result);
    return attempt.unavailable;
  }

  function sharedFailure(value: string | undefined, ttlMs: number, countedFrom: number): SharedFailure | undefined {
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
export function unusableCredentialStore(unavailable: StoreUnavailable): CredentialStore {
  const answer = (): Promise<StoreUnavailable> => Promise.resolve(unavailable);
  return { read: answer, write: answer, takeLease: answer, deleteIfSame: answer, recordFailure: answer };
}
