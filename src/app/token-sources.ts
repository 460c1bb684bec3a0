import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import type { Log } from '../core/log.js';
import type { Dispatcher } from 'undici';
import type { RedisTokenStore } from '../store/index.js';
import type { Metrics } from '../telemetry/metrics.js';
import {
  authMethod,
  configuredCredential,
  passthroughClientAuth,
  passthroughMethod,
  type CredentialTarget,
  type TokenStartup,
} from '../token/client-auth/index.js';
import { createDpopClient, watchDpopKeyFile, type DpopClient, type DpopObserver, type DpopStartup } from '../token/dpop/index.js';
import { tokenEndpointFromConfig, type TokenEndpoint } from '../token/discovery/index.js';
import { tokenFetcherFromConfig } from '../token/fetch-token.js';
import { configuredStoreUse, passthroughStoreUse, type StoreUseOptions } from '../token/from-store/store-use.js';
import { createSourceCache, type SourceCache } from '../token/source-cache.js';
import { TokenSource } from '../token/token-source.js';
import type { StopList } from './shutdown.js';

export interface TokenSourceDeps {
  config: Config;
  /** The secret, key or assertion as read at start. */
  token: TokenStartup;
  /** The DPoP mode and key as read at start. */
  dpop: DpopStartup;
  clock: Clock;
  log: Log;
  random: () => number;
  metrics: Metrics;
  /** The identity provider's connections. */
  dispatcher: Dispatcher;
  /** Where each part registers how it is stopped. */
  stops: StopList;
  /** The shared token store, when `TOKEN_STORE_URL` is set. */
  store?: RedisTokenStore | undefined;
  /** The client certificate chain presented now (`TLS_CLIENT_CERT_FILE`), part of a credential the certificate proves. */
  clientCertificate?: (() => string | undefined) | undefined;
}

/** The token side as wired: its sources, and where their requests go. */
export interface TokenSources {
  /** The configured credential's source, when one is configured. */
  readonly configured: TokenSource | undefined;
  /** What changes in the configured credential's material outside its own files reaches (a new client certificate). */
  readonly configuredTarget: CredentialTarget | undefined;
  /** The pass-through credentials' cache, when `PASSTHROUGH_BASIC` is on. */
  readonly passthrough: SourceCache | undefined;
  /** The token endpoint both send to: `TOKEN_URL`, or the one `ISSUER_URL`'s metadata names. */
  readonly endpoint: TokenEndpoint;
}

/** What the sources are built with: the dependencies, and the one token endpoint they share. */
type Wiring = TokenSourceDeps & { endpoint: TokenEndpoint };

/**
 * The configured credential's token source (when one is configured), following the files it is
 * made of, and the pass-through credentials' cache (when `PASSTHROUGH_BASIC` is on), both sending
 * to one token endpoint (an issuer's metadata is read once for both), each inStore its tokens
 * through the token store when one is configured. Neither is started here.
 */
export function createTokenSources(deps: TokenSourceDeps): TokenSources {
  const dpop = dpopClient(deps.config, deps.dpop, { ...deps, observer: deps.metrics.dpop });
  const endpoint = tokenEndpointFromConfig(deps.config, { ...deps, dpopAlg: () => dpop?.prover.key().alg });
  const wiring: Wiring = { ...deps, endpoint };
  const { source: configured, target: configuredTarget } = configuredSource(wiring, dpop) ?? {};
  // A new key in DPOP_KEY_FILE: the configured credential fetches a token bound to it at once;
  // tokens held meanwhile keep being proven with the key they are bound to.
  const keyFile = deps.config.dpopKeyFile;
  if (dpop !== undefined && keyFile !== undefined && deps.dpop.keyText !== undefined) {
    const { clock, log } = deps;
    const onRotate = (): void => configuredTarget?.refreshNow('DPoP key changed');
    deps.stops.add(
      watchDpopKeyFile({
        path: keyFile,
        initialText: deps.dpop.keyText,
        alg: deps.config.dpopAlg,
        prover: dpop.prover,
        onRotate,
        clock,
        log,
      }),
    );
  }
  return { configured, configuredTarget, passthrough: passthroughCache(wiring, dpop), endpoint };
}

/** What the credentials shared through the store have in common; undefined without a store. */
function storeUseOptions(deps: TokenSourceDeps, dpop: DpopClient | undefined): StoreUseOptions | undefined {
  const { store, config, clock, random, log } = deps;
  if (store === undefined) return undefined;
  return { store, settings: config, storeTimeoutMs: store.timeoutMs, dpop, keyFile: () => store.keyFile(), clock, random, log };
}

/** The DPoP side (one key per process) with `DPOP` on or required, else undefined. */
export function dpopClient(
  config: Pick<Config, 'baseUrl'>,
  startup: DpopStartup,
  deps: { clock: Clock; log: Log; observer?: DpopObserver },
): DpopClient | undefined {
  if (startup.mode === 'off' || startup.key === undefined) return undefined;
  return createDpopClient({ mode: startup.mode, key: startup.key, baseUrl: config.baseUrl, ...deps });
}

function configuredSource(deps: Wiring, dpop: DpopClient | undefined): { source: TokenSource; target: CredentialTarget } | undefined {
  const { config, token, clock, log, random, metrics, dispatcher, endpoint, stops } = deps;
  // How the configured client proves who it is (TOKEN_AUTH_METHOD).
  const auth = configuredCredential(config, { clock, log, startup: token });
  if (auth.credential === undefined) return undefined;
  const useOptions = storeUseOptions(deps, dpop);
  const inStore =
    useOptions &&
    configuredStoreUse({
      ...useOptions,
      method: authMethod(config.tokenAuthMethod),
      clientId: auth.credential.clientId,
      material: () => ({ ...auth.material(), clientCertificate: deps.clientCertificate?.() }),
    });
  const source = new TokenSource({
    label: 'configured',
    credential: auth.credential,
    fetchToken: tokenFetcherFromConfig(config, endpoint, dispatcher, () => clock.now(), auth.clientAuth, dpop),
    clock,
    random,
    refreshRatio: config.tokenRefreshRatio,
    waitTimeoutMs: config.tokenWaitTimeoutMs,
    log,
    observer: metrics.configuredToken,
    endpoint,
    dpop,
    withStore: inStore?.withStore,
  });
  stops.add(() => source.stop());
  // The files the credential is made of (secret, key, assertion): a change reaches the source,
  // through its store namespace when it is shared.
  const target = inStore?.target(source) ?? source;
  stops.add(auth.watch(target));
  // A new store key file: a new namespace, used from the next refresh on.
  if (inStore !== undefined) deps.store?.onKeyFile(() => inStore.update());
  return { source, target };
}

/** Callers' own Basic credentials, each with a token source of its own. */
function passthroughCache(deps: Wiring, dpop: DpopClient | undefined): SourceCache | undefined {
  const { config, clock, log, random, metrics, dispatcher, endpoint, stops } = deps;
  if (!config.passthroughBasic) return undefined;
  const useOptions = storeUseOptions(deps, dpop);
  const cache = createSourceCache({
    withStore: useOptions && passthroughStoreUse({ ...useOptions, method: passthroughMethod(config) }),
    max: config.tokenCacheMax,
    fetchToken: tokenFetcherFromConfig(
      config,
      endpoint,
      dispatcher,
      () => clock.now(),
      passthroughClientAuth(config, { clock, log }),
      dpop,
    ),
    dpop,
    clock,
    random,
    refreshRatio: config.tokenRefreshRatio,
    waitTimeoutMs: config.tokenWaitTimeoutMs,
    defaultLifetimeMs: config.tokenDefaultTtlS * 1000,
    log,
    observer: metrics.passthroughToken,
    onSize: (n) => metrics.setTokenCacheEntries(n),
  });
  stops.add(() => cache.stop());
  return cache;
}
