import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import type { Log } from '../core/log.js';
import type { TlsMaterial } from '../net/tls-material.js';
import { openRedisTokenStore, watchStoreFiles, type RedisTokenStore, type StoreSettings, type TokenStoreObserver } from '../store/index.js';
import type { StopList } from './shutdown.js';

/** The shared token store as the rest of the wiring uses it. */
export interface OpenedTokenStore {
  readonly store: RedisTokenStore;
  /** `TOKEN_STORE_TIMEOUT_MS`. */
  readonly timeoutMs: number;
  /** `TOKEN_STORE_KEY_FILE`'s content now, if set. */
  keyFile(): Uint8Array | undefined;
  /** Called when `TOKEN_STORE_KEY_FILE` changes (a new namespace for every credential). */
  onKeyFile(listener: () => void): void;
}

export interface TokenStoreDeps {
  config: Pick<Config, 'tokenFetchTimeoutMs' | 'tokenStorePasswordFile' | 'tokenStoreKeyFile'>;
  /** The store's settings as checked at start; undefined without `TOKEN_STORE_URL`. */
  settings: StoreSettings | undefined;
  /** The TLS material at start (`CA_FILE`, the client certificate). */
  tls: TlsMaterial;
  clock: Clock;
  random: () => number;
  log: Log;
  observer: TokenStoreObserver | undefined;
  stops: StopList;
}

/**
 * Opens the shared token store when `TOKEN_STORE_URL` is set (its client library starts loading
 * only then), watches its password and key files, and registers its close. Connects on first use.
 */
export function openTokenStore(deps: TokenStoreDeps): OpenedTokenStore | undefined {
  const { settings, clock, log } = deps;
  if (settings === undefined) return undefined;
  const store = openRedisTokenStore({
    settings,
    fetchTimeoutMs: deps.config.tokenFetchTimeoutMs,
    tls: deps.tls,
    clock,
    random: deps.random,
    log,
    observer: deps.observer,
  });
  deps.stops.add(() => store.close());
  let keyFile = settings.keyMaterial;
  const listeners: (() => void)[] = [];
  deps.stops.add(
    watchStoreFiles({
      passwordFile: deps.config.tokenStorePasswordFile,
      keyFile: deps.config.tokenStoreKeyFile,
      initial: settings,
      onPassword: (password) => store.setPassword(password),
      onKeyMaterial: (material) => {
        keyFile = material;
        for (const listener of listeners) listener();
      },
      clock,
      log,
    }),
  );
  return {
    store,
    timeoutMs: settings.timeoutMs,
    keyFile: () => keyFile,
    onKeyFile: (listener) => void listeners.push(listener),
  };
}
