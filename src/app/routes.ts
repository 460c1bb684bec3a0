import type { Config } from '../config/config.js';
import type { LoadedRoute } from '../config/load.js';
import type { RouteWay } from '../config/routes.js';
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import { dispatchersFromSettings, type Dispatchers } from '../net/dispatchers.js';
import { watchTlsFiles } from '../net/tls-files.js';
import type { TlsMaterial } from '../net/tls-material.js';
import { CREDENTIALS_REQUIRED } from '../proxy/authorizer.js';
import { forwardedPaths } from '../proxy/path-guard.js';
import { Recorder } from '../proxy/recorder.js';
import { SeenHeaderNames } from '../proxy/response-headers.js';
import type { Route } from '../proxy/route.js';
import type { TokenStore } from '../store/index.js';
import type { Metrics, RouteMetrics } from '../telemetry/metrics.js';
import { withRouteTracing, type Tracing } from '../telemetry/tracing/index.js';
import {
  authMethod,
  configuredCredential,
  passthroughClientAuth,
  passthroughMethod,
  type ClientAuth,
  type ConfiguredCredential,
  type CredentialTarget,
} from '../token/client-auth/index.js';
import { tokenEndpointFromConfig, type TokenEndpoint } from '../token/discovery/index.js';
import { credentialIdentity } from '../token/credential-identity.js';
import { createDpopClient, dpopGateway, watchDpopKeyFile, type DpopClient, type DpopStartup } from '../token/dpop/index.js';
import { tokenFetcher, type FetchToken } from '../token/fetch-token.js';
import { shareConfigured, sharePassthrough, type SharingOptions } from '../token/from-store/shared-credentials.js';
import { RefreshLoop } from '../token/refresh-loop.js';
import { backoffPolicy, DEFAULT_SCHEDULE, type BackoffPolicy } from '../token/refresh-schedule.js';
import { createSourceCache, type SourceCache } from '../token/source-cache.js';
import { fetchingSupply, type TokenSupply } from '../token/token-supply.js';
import type { TokenSourceObserver } from '../token/token-state.js';
import type { Readiness } from './readiness.js';
import type { ROUTE_CHECKS } from './settings-checks.js';
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

/** What a route's settings checks read at start (`ROUTE_CHECKS`): its TLS files, its secret, key or assertion, its DPoP key. */
export type RouteStartup = LoadedRoute<typeof ROUTE_CHECKS>['checked'];

export interface RouteDeps {
  /** The routes as loaded: each its settings over the top level's, and what its checks read. */
  routes: readonly LoadedRoute<typeof ROUTE_CHECKS>[];
  clock: Clock;
  log: Log;
  random: () => number;
  metrics: Metrics;
  /** What `/readyz` says: each route's configured credential's token state reaches it. */
  readiness: Readiness;
  /** Tracing, when on: each route's requests and token fetches make their spans, naming the route. */
  tracing?: Tracing | undefined;
  /** Where each part registers how it is stopped. */
  stops: StopList;
  /** The shared token store, when `TOKEN_STORE_URL` is set. */
  store?: RouteStore | undefined;
}

/** A route as wired: what the request path reads, how a caller reaches it, and what the app starts. */
export interface WiredRoute {
  readonly route: Route;
  readonly way: RouteWay;
  /** The route's own settings, over the top level's. */
  readonly config: Config;
  /**
   * The configured credential's refresh loop, when one is configured and this is the first route
   * holding it (routes with the same credential share one loop): started once the listeners are up.
   */
  readonly configured: RefreshLoop | undefined;
  /** The token endpoint its credentials send to: the route's `tokenUrl`, or the one its `issuerUrl`'s metadata names. */
  readonly endpoint: TokenEndpoint;
  /** Whether its credentials are pass-through ones alone (no configured credential). */
  readonly passthroughAlone: boolean;
}

/** What one route's credentials are built with: its settings, the process's parts, and its own connections and token endpoint. */
interface CredentialWiring {
  readonly deps: RouteDeps;
  readonly name: string;
  readonly config: Config;
  readonly startup: RouteStartup;
  readonly dispatchers: Dispatchers;
  /** The route's TLS material now: its client certificate is part of a credential it proves. */
  readonly tls: () => TlsMaterial;
  readonly endpoint: TokenEndpoint;
  readonly dpop: DpopClient | undefined;
  readonly backoff: BackoffPolicy;
  readonly sharing: SharingOptions | undefined;
  readonly metrics: RouteMetrics;
}

/** A configured credential as wired once, and shared by every route holding the same one. */
interface ConfiguredWired {
  readonly loop: RefreshLoop;
  /** Where a new client certificate of the route that built it goes. */
  readonly target: CredentialTarget;
}

/**
 * The routes the settings name, each a gateway with its credentials (docs/routes.md): its own
 * connections (its CA and client certificate), token endpoint, configured credential's refresh
 * loop (routes with the same credential share one, fetched once: counted under the first of them),
 * pass-through credentials' cache, DPoP proofs (a route without a key file of its own signs with
 * the process's key) and recorder (its metrics carry its name). Each shares its tokens through
 * the token store when one is configured. No loop is started here.
 */
export function createRoutes(deps: RouteDeps): WiredRoute[] {
  const dpopClients = new Map<string, DpopClient>();
  const credentials = new Map<string, ConfiguredWired>();
  /** The route that built each credential's loop: its fetches are counted under it. */
  const firstRoute = new Map<string, string>();
  return deps.routes.map((loaded) => {
    const { config, checked: startup, name } = loaded;
    const { clock, log } = deps;
    const tracing = deps.tracing?.route({
      name,
      baseUrl: config.baseUrl,
      paths: loaded.paths,
      tokenHost: new URL(config.tokenUrl ?? config.issuerUrl ?? config.baseUrl).host,
    });
    const metrics = withRouteTracing(deps.metrics.route(name), tracing);
    // Pass-through tokens held, from 0: on a route that takes them, and on a proxy of one route
    // whatever it takes (the gauge it always had); an added route without them adds no series.
    if (config.passthroughBasic || deps.routes.length === 1) metrics.setTokenCacheEntries(0);
    const dispatchers = dispatchersFromSettings(config, startup.tls.material);
    deps.stops.add(() => dispatchers.destroy());
    let tls = startup.tls.material;
    const dpop = dpopClient(startup.dpop, { clock, log, observer: deps.metrics.dpop }, dpopClients);
    const endpoint = tokenEndpointFromConfig(config, { dispatcher: dispatchers.token, clock, log, dpopAlg: () => dpop?.prover.key().alg });
    const wiring: CredentialWiring = {
      deps,
      name,
      config,
      startup,
      dispatchers,
      tls: () => tls,
      endpoint,
      dpop,
      backoff: backoffPolicy(DEFAULT_SCHEDULE, deps.random),
      sharing: sharingOf(deps, config, dpop),
      metrics,
    };
    const auth = configuredCredential(config, { clock, log, startup: startup.token });
    const id = auth.credential === undefined ? undefined : credentialIdentity(config, auth, tls.cert, dpop);
    const first = id === undefined || !credentials.has(id);
    const configured = auth.credential === undefined ? undefined : first ? configuredLoop(wiring, auth) : credentials.get(id!)!;
    if (id !== undefined && configured !== undefined && first) {
      credentials.set(id, configured);
      firstRoute.set(id, name);
    }
    if (!first) {
      deps.readiness.sameCredential(name, firstRoute.get(id!)!);
      log.info(
        { route: name, sharesWith: firstRoute.get(id!) },
        'this route holds the same credential as an earlier one: they share one token',
      );
    }
    if (auth.credential === undefined) deps.readiness.route(name);
    const passthrough = passthroughCache(wiring);
    if (first) watchDpopKey(wiring, configured?.target);
    // Rotated TLS files are used by new connections; a new client certificate fetches a token at once.
    deps.stops.add(
      watchTlsFiles({
        config,
        initial: startup.tls,
        clock,
        log,
        onChange: (material, what) => {
          tls = material;
          dispatchers.setTls(material);
          if (what === 'client_certificate') configured?.target.refreshNow('client certificate changed');
        },
      }),
    );
    const route: Route = {
      name,
      paths: forwardedPaths(loaded.paths),
      baseUrl: config.baseUrl,
      basePath: new URL(config.baseUrl).pathname.replace(/\/$/, ''),
      connections: dispatchers.gateway,
      dpop: dpopGateway(config.baseUrl),
      authorizer: configured?.loop.held ?? CREDENTIALS_REQUIRED,
      passthrough,
      upstreamTimeoutMs: config.upstreamTimeoutMs,
      upstreamIdleTimeoutMs: config.upstreamIdleTimeoutMs,
      replayBodyLimitBytes: config.replayBodyLimitBytes,
      seenNames: new SeenHeaderNames(),
      recorder: new Recorder({ observer: metrics.requests, log, accessLog: config.accessLog, route: name, tracer: tracing?.requests }),
    };
    return {
      route,
      way: loaded.way,
      config,
      configured: first ? configured?.loop : undefined,
      endpoint,
      passthroughAlone: auth.credential === undefined,
    };
  });
}

/**
 * The DPoP side of a route with `DPOP` on or required, else undefined: one client per key (and
 * mode), so routes signing with the same key share it; a key generated at start (no key file) is
 * the process's, the first route's, whatever the others generated.
 */
export function dpopClient(
  startup: DpopStartup,
  deps: Pick<Parameters<typeof createDpopClient>[0], 'clock' | 'log' | 'observer'>,
  clients: Map<string, DpopClient> = new Map(),
): DpopClient | undefined {
  if (startup.mode === 'off' || startup.key === undefined) return undefined;
  const generated = startup.keyText === undefined;
  const id = `${startup.mode} ${generated ? `generated ${startup.key.alg}` : startup.key.thumbprint}`;
  let client = clients.get(id);
  if (client === undefined) clients.set(id, (client = createDpopClient({ mode: startup.mode, key: startup.key, ...deps })));
  return client;
}

/** What the credentials shared through the store have in common; undefined without a store. */
function sharingOf(deps: RouteDeps, config: Config, dpop: DpopClient | undefined): SharingOptions | undefined {
  const { store, clock, random, log } = deps;
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
function fetcherFor(wiring: CredentialWiring, clientAuth: ClientAuth, dispatcher = wiring.dispatchers.token): FetchToken {
  const { config, endpoint, dpop } = wiring;
  const clock = wiring.deps.clock;
  return tokenFetcher({ settings: config, endpoint, dispatcher, now: () => clock.now(), clientAuth, dpop });
}

/** This proxy's own fetch, counted by `count`. */
function ownSupply(wiring: CredentialWiring, fetchToken: FetchToken, count: TokenSourceObserver['onFetch']): TokenSupply {
  return fetchingSupply(fetchToken, { clock: wiring.deps.clock, count, backoff: wiring.backoff, schedule: DEFAULT_SCHEDULE });
}

/** The configured credential's refresh loop and where its watches reach it. */
function configuredLoop(wiring: CredentialWiring, auth: ConfiguredCredential): ConfiguredWired {
  const { clock, log, random, stops, readiness } = wiring.deps;
  const { config, name } = wiring;
  const shared =
    wiring.sharing &&
    shareConfigured({
      ...wiring.sharing,
      method: authMethod(config.tokenAuthMethod),
      clientId: auth.credential!.clientId,
      material: () => ({ ...auth.material(), clientCertificate: wiring.tls().cert }),
    });
  const observer = readiness.credential(name, wiring.endpoint, wiring.metrics.configuredToken);
  const own = ownSupply(wiring, fetcherFor(wiring, auth.clientAuth), observer.onFetch);
  const loop = new RefreshLoop({
    label: 'configured',
    route: name,
    credential: auth.credential!,
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

/** Callers' own Basic credentials on this route, each with a refresh loop of its own. */
function passthroughCache(wiring: CredentialWiring): SourceCache | undefined {
  const { clock, log, random, stops } = wiring.deps;
  const { config, metrics } = wiring;
  if (!config.passthroughBasic) return undefined;
  // Connections of their own: the configured credential's fetches never wait behind a flood of these.
  const fetchToken = fetcherFor(wiring, passthroughClientAuth(config, { clock, log }), wiring.dispatchers.passthroughToken);
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
    route: wiring.name,
    observer: metrics.passthroughToken,
    onSize: (n) => metrics.setTokenCacheEntries(n),
  });
  stops.add(() => cache.stop());
  return cache;
}

/**
 * A new key in the route's `DPOP_KEY_FILE`: its configured credential fetches a token bound to it
 * at once; tokens held meanwhile keep being proven with the key they are bound to.
 */
function watchDpopKey(wiring: CredentialWiring, target: CredentialTarget | undefined): void {
  const { config, startup, dpop } = wiring;
  const keyFile = config.dpopKeyFile;
  if (dpop === undefined || keyFile === undefined || startup.dpop.keyText === undefined) return;
  wiring.deps.stops.add(
    watchDpopKeyFile({
      path: keyFile,
      initialText: startup.dpop.keyText,
      alg: config.dpopAlg,
      prover: dpop.prover,
      onRotate: () => target?.refreshNow('DPoP key changed'),
      clock: wiring.deps.clock,
      log: wiring.deps.log,
    }),
  );
}
