import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { TlsMaterial } from '../net/tls-material.js';
import { createRedisBackend } from './redis-backend.js';
import type { StoreSettings } from './settings.js';
import { createTokenStore } from './store.js';
import type { KeyDeriver } from './store-key.js';
import type { TokenStore, TokenStoreObserver } from './token-store.js';

/** A lease lasts the fetch it guards, plus this: a fetch that ends at its timeout still writes under it. */
export const LEASE_MARGIN_MS = 1_000;

export interface OpenStoreOptions {
  settings: StoreSettings;
  /** `TOKEN_FETCH_TIMEOUT_MS`: a lease lasts as long, plus {@link LEASE_MARGIN_MS}. */
  fetchTimeoutMs: number;
  /** The TLS material at start (`checkNetSettings`); `setTls` brings a rotated one. */
  tls: TlsMaterial;
  clock: Clock;
  random: () => number;
  log: Log;
  observer?: TokenStoreObserver | undefined;
  derive?: KeyDeriver | undefined;
  /** How long an unused connection stays open; 30 s unless given (tests). */
  idleMs?: number | undefined;
}

/** The store on Redis or Valkey, with what the wiring changes when a watched file does. */
export interface RedisTokenStore extends TokenStore {
  /** A new `TOKEN_STORE_PASSWORD_FILE` password: the connection is made anew with it. */
  setPassword(password: string): void;
  /** New TLS material (`CA_FILE`, the client certificate): new connections use it. */
  setTls(material: TlsMaterial): void;
}

/**
 * Opens the token store `TOKEN_STORE_URL` names: starts loading the Redis client library (only
 * now: a proxy without a store never loads it), which goes on while the configured credential's
 * key is derived ({@link TokenStore.credential}), and connects on first use or {@link TokenStore.need}.
 * Never connects here.
 */
export function openRedisTokenStore(options: OpenStoreOptions): RedisTokenStore {
  const { settings } = options;
  let password = settings.password;
  let tls = options.tls;
  const backend = createRedisBackend({
    endpoint: settings.endpoint,
    password: () => password,
    passwordSource: settings.passwordSource,
    tls: () => tls,
    timeoutMs: settings.timeoutMs,
    clock: options.clock,
    idleMs: options.idleMs,
  });
  const store = createTokenStore({
    backend,
    prefix: settings.prefix,
    timeoutMs: settings.timeoutMs,
    leaseMs: options.fetchTimeoutMs + LEASE_MARGIN_MS,
    clock: options.clock,
    random: options.random,
    log: options.log,
    observer: options.observer,
    where: settings.endpoint.shown,
    derive: options.derive,
  });
  return {
    credential: (input) => store.credential(input),
    need: () => store.need(),
    get up() {
      return store.up;
    },
    probe: () => store.probe(),
    close: () => store.close(),
    setPassword(next) {
      password = next;
      backend.reset();
    },
    setTls(material) {
      tls = material;
    },
  };
}
