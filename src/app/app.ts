import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { openTokenStore, type StoreSettings } from '../store/index.js';
import { createAdminServer } from '../admin/server.js';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import type { LoadedRoute } from '../config/load.js';
import { isLoopbackHost } from '../core/hosts.js';
import type { Log } from '../core/log.js';
import { outboundDispatcher } from '../net/dispatchers.js';
import { watchTlsFiles, type TlsFiles } from '../net/tls-files.js';
import { createForwarder } from '../proxy/forward.js';
import { Recorder } from '../proxy/recorder.js';
import { createProxyServer } from '../proxy/server.js';
import { registerBuildInfo } from '../telemetry/build-info.js';
import { createStalledCallers } from '../proxy/stalled-callers.js';
import { createMetrics } from '../telemetry/metrics.js';
import { startTracing, withTracing, type TracingSettings } from '../telemetry/tracing/index.js';
import { describeFetchFailure, displayTokenUrl } from '../token/diagnose.js';
import type { TokenEndpoint } from '../token/discovery/index.js';
import { listen } from './listeners/listen.js';
import { listenerPlans, listenOrigin, openListeners, removeSockets, type OpenListener } from './listeners/proxy-listeners.js';
import { createMemoryControl } from '../overload/memory-control.js';
import { Readiness } from './readiness.js';
import type { ROUTE_CHECKS } from './settings-checks.js';
import { shutdown, StopList } from './shutdown.js';
import { createRoutes, type WiredRoute } from './routes.js';

export interface AppDeps {
  /** The top-level settings: the whole proxy's, and every route's defaults. */
  config: Config;
  /** The top-level TLS files as read at start: the token store's and the trace collector's. */
  tls: TlsFiles;
  /** The routes as loaded (docs/routes.md): without `routes`, the top-level settings as `default`. */
  routes: readonly LoadedRoute<typeof ROUTE_CHECKS>[];
  /** The token store's settings as checked at start; undefined without `TOKEN_STORE_URL`. */
  store?: StoreSettings | undefined;
  /** Where spans go, as checked at start; undefined with tracing off. */
  tracing?: TracingSettings | undefined;
  log: Log;
  clock: Clock;
  random: () => number;
  registry: Registry;
  /** The proxy's version (package.json), exported as `ticket_auth_proxy_build_info`. */
  version: string;
}

export interface App {
  /** The main proxy listener's address, or its socket's path. */
  readonly proxyAddress: AddressInfo | string;
  /** Each route's own listener, by route name (a route reached through the main listener has none). */
  readonly routeAddresses: ReadonlyMap<string, AddressInfo | string>;
  readonly adminAddress: AddressInfo;
  /** Graceful shutdown (docs/operations.md, "Shutdown"); resolves with the exit status. */
  shutdown(): Promise<number>;
}

/** Builds the parts from the configuration, wires them, and opens the listeners. */
export async function startApp(deps: AppDeps): Promise<App> {
  const { config, log, clock, registry } = deps;
  const counted = createMetrics(registry, {
    tokenStore: deps.store !== undefined,
    dpop: deps.routes.some((r) => r.config.dpop !== 'off'),
    tracing: deps.tracing !== undefined,
    runtime: config.metricsRuntime,
  });
  registerBuildInfo(registry, deps.version);
  const stops = new StopList();
  const outbound = deps.tracing === undefined ? undefined : outboundDispatcher(config, deps.tls.material);
  if (outbound !== undefined) stops.add(() => outbound.destroy());
  const tracing = await startTracing(deps.tracing, {
    dispatcher: outbound!,
    log,
    dropped: counted.spansDropped ?? (() => {}),
  });
  if (tracing !== undefined) stops.add(() => tracing.shutdown());
  const metrics = withTracing(counted, tracing);
  const store =
    deps.store &&
    openTokenStore({
      ...deps,
      settings: deps.store,
      fetchTimeoutMs: config.tokenFetchTimeoutMs,
      tls: deps.tls.material,
      observer: metrics.tokenStore,
      watchFiles: true,
    });
  if (store !== undefined) stops.add(() => store.close());
  // The top level's rotated TLS files reach the store's and the collector's new connections.
  stops.add(
    watchTlsFiles({
      config,
      initial: deps.tls,
      clock,
      log,
      onChange: (material) => {
        store?.setTls(material);
        outbound?.setTls(material);
      },
    }),
  );
  const readiness = new Readiness(config.readiness, clock);
  const wired = createRoutes({ ...deps, metrics, readiness, tracing, stops, store });

  const callers = createStalledCallers({ clock });
  const memory = createMemoryControl({ memoryLimitMb: config.memoryLimitMb, action: callers, clock, log });
  stops.add(memory.stop);
  /** Where a listener records what no route takes: its own route's recorder, or one of no route. */
  const recorders: Recorder[] = wired.map((w) => w.route.recorder);
  const serve = (plan: ReturnType<typeof listenerPlans>[number]): Server => {
    const own = wired.find((w) => w.route.name === plan.route)?.route.recorder;
    const recorder = own ?? new Recorder({ route: '', observer: metrics.unrouted(), log, accessLog: config.accessLog });
    if (own === undefined) recorders.push(recorder);
    const forward = createForwarder({
      routes: plan.routes,
      budget: memory.budget,
      load: memory.load,
      recorder,
      callers,
      log,
      listenOrigin: listenOrigin(plan.place),
    });
    return createProxyServer({ forward, recorder, log, maxHeaderBytes: config.maxHeaderBytes });
  };
  const adminServer = createAdminServer({ registry, log, readiness: readiness.check });

  let listeners: OpenListener[];
  let adminAddress: AddressInfo;
  try {
    listeners = await openListeners(listenerPlans(config, wired), serve, log);
    try {
      adminAddress = await listen(
        adminServer,
        { host: config.adminHost, port: config.adminPort, what: 'the admin listener (ADMIN_HOST, ADMIN_PORT)' },
        log,
      );
    } catch (err) {
      for (const l of listeners) l.server.close();
      await removeSockets(listeners, log);
      throw err;
    }
  } catch (err) {
    await stops.stopAll();
    throw err;
  }
  // The tokens are fetched once the listeners are up: a listener that cannot open costs the
  // identity provider nothing.
  for (const w of wired) {
    w.configured?.start();
    // Pass-through credentials only: no token is fetched at start, but an issuer's metadata is read
    // then all the same, so its warnings come at start and the first caller does not wait for it.
    if (w.passthroughAlone) readEndpointAtStart(w.endpoint, log);
  }
  readiness.listen();
  stops.add(memory.watch(() => recorders.reduce((n, r) => n + r.served, 0)));
  announce({ wired, listeners, adminAddress, log });

  return {
    proxyAddress: listeners[0]!.address,
    routeAddresses: new Map(
      listeners.flatMap((l) => (l.plan.route !== undefined && l !== listeners[0] ? [[l.plan.route, l.address]] : [])),
    ),
    adminAddress,
    shutdown: () =>
      shutdown({
        servers: [...listeners.map((l) => l.server), adminServer],
        delayS: config.shutdownDelayS,
        timeoutS: config.shutdownTimeoutS,
        clock,
        log,
        onBegin: () => readiness.stop(),
        onListenersClosed: () => removeSockets(listeners, log),
        onClosed: () => stops.stopAll(),
      }),
  };
}

/** Reads an issuer's metadata now; a failure is logged, and the first token fetch reads it again. */
function readEndpointAtStart(endpoint: TokenEndpoint, log: Log): void {
  if (endpoint.issuer === undefined) return;
  endpoint.resolve().catch((err: unknown) => {
    const failure = describeFetchFailure(err, endpoint);
    log.warn({ issuer: endpoint.issuer, outcome: failure.outcome, reason: failure.text }, 'the issuer metadata could not be read');
  });
}

/** The listeners as opened, and what they serve: said once at start. */
interface Opened {
  wired: readonly WiredRoute[];
  listeners: readonly OpenListener[];
  adminAddress: AddressInfo;
  log: Log;
}

/** Where the listeners are, shown as a log line shows them. */
function shown(address: AddressInfo | string, mode: string | undefined): object {
  return typeof address === 'string' ? { socket: address, mode } : { host: address.address, port: address.port };
}

function announce(opened: Opened): void {
  const { wired, listeners, adminAddress, log } = opened;
  listeners.forEach(({ plan, address }, i) => {
    const place = plan.place;
    // The main listener's warnings name its settings; a route's, the route and its keys.
    const whose = i === 0 ? undefined : plan.route;
    if (place.kind === 'socket') {
      // Connecting takes write permission on the socket file: "other" may write, so every local user may connect.
      if ((Number.parseInt(place.mode, 8) & 0o002) !== 0) {
        log.warn(
          { socket: address, mode: place.mode, route: whose },
          whose === undefined
            ? 'the proxy socket lets every local user connect (LISTEN_SOCKET_MODE): anyone who can reach it uses the configured credentials'
            : `route "${whose}"'s socket lets every local user connect (its listenSocketMode): anyone who can reach it uses its ` +
                'credentials',
        );
      }
    } else if (!isLoopbackHost(place.host)) {
      log.warn(
        { host: place.host, route: whose },
        whose === undefined
          ? 'the proxy listener is not on loopback: anyone who can reach it uses the configured credentials'
          : `route "${whose}"'s listener is not on loopback (its listenHost): anyone who can reach it uses its credentials`,
      );
    }
  });
  const main = listeners[0]!;
  const where = {
    proxy: shown(main.address, main.plan.place.kind === 'socket' ? main.plan.place.mode : undefined),
    admin: { host: adminAddress.address, port: adminAddress.port },
  };
  const served = (w: WiredRoute): object => ({
    gateway: w.route.baseUrl,
    paths: w.route.paths.prefixes,
    tokenUrl: w.endpoint.url === undefined ? undefined : displayTokenUrl(w.endpoint.url),
    issuer: w.endpoint.issuer,
  });
  // One route (the settings without `routes`): what it serves at the top of the line, as ever.
  const only = wired.length === 1 && wired[0]!.way.kind === 'main' ? wired[0]! : undefined;
  log.info(
    only !== undefined
      ? { ...where, ...served(only) }
      : {
          ...where,
          routes: wired.map((w) => ({
            route: w.route.name,
            ...(w.way.kind === 'mount' ? { mount: w.way.mount } : {}),
            ...ownListener(listeners, w.route.name),
            ...served(w),
          })),
        },
    'listeners up',
  );
}

/** A route's own listener, as the log line names it. */
function ownListener(listeners: readonly OpenListener[], route: string): object {
  const own = listeners.find((l, i) => i > 0 && l.plan.route === route);
  if (own === undefined) return {};
  return { listener: shown(own.address, own.plan.place.kind === 'socket' ? own.plan.place.mode : undefined) };
}
