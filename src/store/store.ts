import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { StoreBackend } from './backend.js';
import { createCredentialStore, unusableCredentialStore } from './credential-store.js';
import { StoreHealth } from './health.js';
import { deriveStoreKey, scryptDeriver, type KeyDeriver } from './store-key.js';
import type { TokenStore, TokenStoreObserver } from './token-store.js';

export interface TokenStoreOptions {
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
 * The {@link TokenStore} over a backend (Redis, or the in-memory one): the credentials' keys, the
 * operations bounded by the store timeout, and the store's health.
 */
export function createTokenStore(options: TokenStoreOptions): TokenStore {
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
    async credential(input) {
      try {
        const key = await deriveStoreKey({ ...input, prefix: options.prefix, derive });
        return createCredentialStore({ key, backend, health, clock, leaseMs: options.leaseMs, observer });
      } catch (err) {
        // scrypt refused (its memory, most likely): this credential works as without a store.
        const detail = `the token store key could not be derived (${(err as Error).message}): this credential does without the store`;
        options.log.error({ store: options.where }, detail);
        return unusableCredentialStore({ kind: 'unavailable', reason: 'error', detail });
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
