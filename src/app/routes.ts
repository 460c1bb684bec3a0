import type { Config } from '../config/config.js';
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { Dispatchers } from '../net/dispatchers.js';
import { CREDENTIALS_REQUIRED } from '../proxy/authorizer.js';
import { DEFAULT_PATHS } from '../proxy/path-guard.js';
import { SeenHeaderNames } from '../proxy/response-headers.js';
import type { Route } from '../proxy/route.js';
import type { TokenStore } from '../store/index.js';
import type { Metrics } from '../telemetry/metrics.js';
import {
  authMethod,
  configuredCredential,
  passthroughClientAuth,
  passthroughMethod,
  type ClientAuth,
  type CredentialTarget,
  type TokenStartup,
} from '../token/client-auth/index.js';
import { tokenEndpointFromConfig, type TokenEndpoint } from '../token/discovery/index.js';
import { createDpopClient, dpopGateway, watchDpopKeyFile, type DpopClient, type DpopStartup } from '../token/dpop/index.js';
import { tokenFetcher, type FetchToken } from '../token/fetch-token.js';
import { shareConfigured, sharePassthrough, type SharingOptions } from '../token/from-store/shared-credentials.js';
import { RefreshLoop } from '../token/refresh-loop.js';
import { backoffPolicy, DEFAULT_SCHEDULE, type BackoffPolicy } from '../token/refresh-schedule.js';
import { createSourceCache, type SourceCache } from '../token/source-cache.js';
import { fetchingSupply, type TokenSupply } from '../token/token-supply.js';
import type { TokenSourceObserver } from '../token/token-state.js';
import type { Readiness } from './readiness.js';
import type { StopList } from './shutdown.js';

/** The shared token store as the routes use it, when `TOKEN_STORE_URL` is set. */
export interface RouteStore {
  readonly tokens: TokenStore;
  /** `TOKEN_STORE_TIMEOUT_MS`. */
  readonly timeoutMs: number;
  /** `TOKEN_STORE_KEY_FILE`'s content now, if set. */
  keyFile(): Uint8Array | undefined;
  /** Called when `TOKEN_STORE_KEY_FILE` changes: a new slot for every credential. */
  onKeyFile(listener: () => void): void;
}

export interface RouteDeps {
  config: Config;
  /** The secret, key or assertion as read at start. */
  token: TokenStartup;
  /** The DPoP mode and key as read at start. */
  dpop: DpopStartup;
  clock: Clock;
  log: Log;
  random: () => number;
  metrics: Metrics;
  /** What `/readyz` says: each configured credential's token state reaches it. */
  readiness: Readiness;
  /** The gateway's and the identity provider's connections. */
  dispatchers: Dispatchers;
  /** Where each part registers how it is stopped. */
  stops: StopList;
  /** The shared token store, when `TOKEN_STORE_URL` is set. */
  store?: RouteStore | undefined;
  /** The client certificate chain presented now (`TLS_CLIENT_CERT_FILE`), part of a credential the certificate proves. */
  clientCertificate?: (() => string | undefined) | undefined;
}

/** A route as wired: what the request path reads, and what the app starts and tells. */
export interface WiredRoute {
  readonly route: Route;
  /** The configured credential's refresh loop, when one is configured: started once the listeners are up. */
  readonly configured: RefreshLoop | undefined;
  /** Where a change of the configured credential's material outside its own files goes (a new client certificate). */
  readonly configuredTarget: CredentialTarget | undefined;
  /** The token endpoint its credentials send to: `TOKEN_URL`, or the one `ISSUER_URL`'s metadata names. */
  readonly endpoint: TokenEndpoint;
}

/** What one route's credentials are built with: the settings, the process's parts, and the route's token endpoint. */
interface CredentialWiring {
  readonly deps: RouteDeps;
  readonly endpoint: TokenEndpoint;
  readonly dpop: DpopClient | undefined;
  readonly backoff: BackoffPolicy;
  readonly sharing: SharingOptions | undefined;
}

/**
 * The routes the settings name, each a gateway with its credentials: for now one route,
 * `default`, from the top-level settings. Its configured credential's refresh loop (when one is
 * configured), following the files it is made of, and its pass-through credentials' cache (when
 * `PASSTHROUGH_BASIC` is on), both sending to one token endpoint (an issuer's metadata is read
 * once for both), each sharing its tokens through the token store when one is configured. No
 * loop is started here.
 */
export function createRoutes(deps: RouteDeps): WiredRoute[] {
  const { config, clock, log } = deps;
  const dpop = dpopClient(deps.dpop, { clock, log, observer: deps.metrics.dpop });
  const endpoint = tokenEndpointFromConfig(config, {
    dispatcher: deps.dispatchers.token,
    clock,
    log,
    dpopAlg: () => dpop?.prover.key().alg,
  });
  const wiring: CredentialWiring = {
    deps,
    endpoint,
    dpop,
    backoff: backoffPolicy(DEFAULT_SCHEDULE, deps.random),
    sharing: sharingOf(deps, dpop),
  };
  const configured = configuredLoop(wiring);
  const passthrough = passthroughCache(wiring);
  watchDpopKey(deps, dpop, configured?.target);
  const route: Route = {
    name: 'default',
    paths: DEFAULT_PATHS,
    baseUrl: config.baseUrl,
    basePath: new URL(config.baseUrl).pathname.replace(/\/$/, ''),
    connections: deps.dispatchers.gateway,
    dpop: dpopGateway(config.baseUrl),
    authorizer: configured?.loop.held ?? CREDENTIALS_REQUIRED,
    passthrough,
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    upstreamIdleTimeoutMs: config.upstreamIdleTimeoutMs,
    replayBodyLimitBytes: config.replayBodyLimitBytes,
    seenNames: new SeenHeaderNames(),
  };
  return [{ route, configured: configured?.loop, configuredTarget: configured?.target, endpoint }];
}

/** The DPoP side (one key per process) with `DPOP` on or required, else undefined. */
export function dpopClient(
  startup: DpopStartup,
  deps: Pick<Parameters<typeof createDpopClient>[0], 'clock' | 'log' | 'observer'>,
): DpopClient | undefined {
  if (startup.mode === 'off' || startup.key === undefined) return undefined;
  return createDpopClient({ mode: startup.mode, key: startup.key, ...deps });
}

/** What the credentials shared through the store have in common; undefined without a store. */
function sharingOf(deps: RouteDeps, dpop: DpopClient | undefined): SharingOptions | undefined {
  const { store, config, clock, random, log } = deps;
  if (store === undefined) return undefined;
  return {
    store: store.tokens,
    settings: config,
    storeTimeoutMs: store.timeoutMs,
    dpop,
    keyFile: () => store.keyFile(),
    clock,
    random,
    log,
  };
}

/** The route's token requests, authenticated with `clientAuth`. */
function fetcherFor(wiring: CredentialWiring, clientAuth: ClientAuth): FetchToken {
  const { config, clock, dispatchers } = wiring.deps;
  const { endpoint, dpop } = wiring;
  return tokenFetcher({ settings: config, endpoint, dispatcher: dispatchers.token, now: () => clock.now(), clientAuth, dpop });
}

/** This proxy's own fetch, counted by `count`. */
function ownSupply(wiring: CredentialWiring, fetchToken: FetchToken, count: TokenSourceObserver['onFetch']): TokenSupply {
  return fetchingSupply(fetchToken, { clock: wiring.deps.clock, count, backoff: wiring.backoff, schedule: DEFAULT_SCHEDULE });
}

/** The configured credential's refresh loop and where its watches reach it, when a credential is configured. */
function configuredLoop(wiring: CredentialWiring): { loop: RefreshLoop; target: CredentialTarget } | undefined {
  const { config, token, clock, log, random, metrics, stops, readiness } = wiring.deps;
  // How the configured client proves who it is (TOKEN_AUTH_METHOD).
  const auth = configuredCredential(config, { clock, log, startup: token });
  if (auth.credential === undefined) return undefined;
  const shared =
    wiring.sharing &&
    shareConfigured({
      ...wiring.sharing,
      method: authMethod(config.tokenAuthMethod),
      clientId: auth.credential.clientId,
      material: () => ({ ...auth.material(), clientCertificate: wiring.deps.clientCertificate?.() }),
    });
  const observer = readiness.credential(wiring.endpoint, metrics.configuredToken);
  const own = ownSupply(wiring, fetcherFor(wiring, auth.clientAuth), observer.onFetch);
  const loop = new RefreshLoop({
    label: 'configured',
    credential: auth.credential,
    supply: shared?.supply(own, wiring.backoff) ?? own,
    backoff: wiring.backoff,
    clock,
    random,
    refreshRatio: config.tokenRefreshRatio,
    waitTimeoutMs: config.tokenWaitTimeoutMs,
    log,
    endpoint: wiring.endpoint,
    observer,
    dpop: wiring.dpop,
  });
  stops.add(() => loop.stop());
  // The files the credential is made of (secret, key, assertion): a change reaches the loop,
  // through its slot in the store when it is shared.
  const target = shared?.target(loop) ?? loop;
  stops.add(auth.watch(target));
  // A new store key file: a new slot, used from the next refresh on.
  if (shared !== undefined) wiring.deps.store?.onKeyFile(() => shared.update());
  return { loop, target };
}

/** Callers' own Basic credentials, each with a refresh loop of its own. */
function passthroughCache(wiring: CredentialWiring): SourceCache | undefined {
  const { config, clock, log, random, metrics, stops } = wiring.deps;
  if (!config.passthroughBasic) return undefined;
  const fetchToken = fetcherFor(wiring, passthroughClientAuth(config, { clock, log }));
  const shared = wiring.sharing && sharePassthrough({ ...wiring.sharing, method: passthroughMethod(config) });
  const count = metrics.passthroughToken.onFetch;
  const cache = createSourceCache({
    supplyFor: (credential, backoff) => {
      const own = ownSupply(wiring, fetchToken, count);
      return shared?.(credential, own, backoff) ?? own;
    },
    backoff: wiring.backoff,
    max: config.tokenCacheMax,
    dpop: wiring.dpop,
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

/**
 * A new key in `DPOP_KEY_FILE`: the configured credential fetches a token bound to it at once;
 * tokens held meanwhile keep being proven with the key they are bound to.
 */
function watchDpopKey(deps: RouteDeps, dpop: DpopClient | undefined, target: CredentialTarget | undefined): void {
  const keyFile = deps.config.dpopKeyFile;
  if (dpop === undefined || keyFile === undefined || deps.dpop.keyText === undefined) return;
  deps.stops.add(
    watchDpopKeyFile({
      path: keyFile,
      initialText: deps.dpop.keyText,
      alg: deps.config.dpopAlg,
      prover: dpop.prover,
      onRotate: () => target?.refreshNow('DPoP key changed'),
      clock: deps.clock,
      log: deps.log,
    }),
  );
}
