import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { TlsMaterial } from '../net/tls-material.js';
import type { TokenStore, TokenStoreObserver } from './contract.js';
import { createRedisBackend } from './redis-backend.js';
import { createSealedStore } from './sealed-store.js';
import type { StoreSettings } from './settings.js';
import { watchSecretFiles } from './secret-files.js';
import type { KeyDeriver } from './slot-key.js';

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
  /**
   * Watch `TOKEN_STORE_PASSWORD_FILE` and `TOKEN_STORE_KEY_FILE` while open (the running proxy);
   * `check`, which opens the store once, does not.
   */
  watchFiles?: boolean | undefined;
}

/**
 * The store `TOKEN_STORE_URL` names, as the wiring holds it: the store the token side uses, and
 * what the wiring changes when a watched file does.
 */
export interface OpenedStore {
  /** The store itself: its operations reach the Redis client through the sealed store and its backend alone. */
  readonly tokens: TokenStore;
  /** `TOKEN_STORE_TIMEOUT_MS`. */
  readonly timeoutMs: number;
  /** A new `TOKEN_STORE_PASSWORD_FILE` password: the connection is made anew with it. */
  setPassword(password: string): void;
  /** New TLS material (`CA_FILE`, the client certificate): new connections use it. */
  setTls(material: TlsMaterial): void;
  /** `TOKEN_STORE_KEY_FILE`'s content now, if set. */
  keyFile(): Uint8Array | undefined;
  /** Called when `TOKEN_STORE_KEY_FILE` changes (a new slot for every credential). */
  onKeyFile(listener: () => void): void;
  /** Stops watching the files, the background check, and closes the connection. */
  close(): Promise<void>;
}

/**
 * Opens the token store `TOKEN_STORE_URL` names: starts loading the Redis client library (only
 * now: a proxy without a store never loads it), which goes on while the configured credential's
 * key is derived ({@link TokenStore.slot}), and connects on first use or {@link TokenStore.need}.
 * Never connects here. With `watchFiles`, follows the password and key files until closed.
 */
export function openTokenStore(options: OpenStoreOptions): OpenedStore {
  const { settings, clock, log } = options;
  let password = settings.password;
  let tls = options.tls;
  let keyFile = settings.keyMaterial;
  const listeners: (() => void)[] = [];
  const backend = createRedisBackend({
    endpoint: settings.endpoint,
    password: () => password,
    passwordSource: settings.passwordSource,
    tls: () => tls,
    timeoutMs: settings.timeoutMs,
    clock,
    idleMs: options.idleMs,
    scripts: settings.scripts,
  });
  const store = createSealedStore({
    backend,
    prefix: settings.prefix,
    timeoutMs: settings.timeoutMs,
    leaseMs: options.fetchTimeoutMs + LEASE_MARGIN_MS,
    clock,
    random: options.random,
    log,
    observer: options.observer,
    where: settings.endpoint.shown,
    derive: options.derive,
  });
  const setPassword = (next: string): void => {
    password = next;
    backend.reset();
  };
  const stopWatching = options.watchFiles
    ? watchSecretFiles({
        passwordFile: settings.passwordFile,
        keyFile: settings.keyFile,
        initial: settings,
        onPassword: setPassword,
        onKeyMaterial: (material) => {
          keyFile = material;
          for (const listener of listeners) listener();
        },
        clock,
        log,
      })
    : () => undefined;
  return {
    tokens: store,
    timeoutMs: settings.timeoutMs,
    async close() {
      stopWatching();
      await store.close();
    },
    setPassword,
    setTls(material) {
      tls = material;
    },
    keyFile: () => keyFile,
    onKeyFile: (listener) => void listeners.push(listener),
  };
}
