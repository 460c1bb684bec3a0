import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { openTokenStore, type StoreSettings } from '../store/index.js';
import { createAdminServer } from '../admin/server.js';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import { isLoopbackHost } from '../core/hosts.js';
import type { Log } from '../core/log.js';
import { dispatchersFromSettings } from '../net/dispatchers.js';
import { watchTlsFiles, type TlsFiles } from '../net/tls-files.js';
import { createForwarder } from '../proxy/forward.js';
import { Recorder } from '../proxy/recorder.js';
import { createProxyServer } from '../proxy/server.js';
import { registerBuildInfo } from '../telemetry/build-info.js';
import { createStalledCallers } from '../proxy/stalled-callers.js';
import { createMetrics } from '../telemetry/metrics.js';
import { startTracing, withTracing, type TracingSettings } from '../telemetry/tracing/index.js';
import { describeFetchFailure, displayTokenUrl } from '../token/diagnose.js';
import type { DpopStartup } from '../token/dpop/index.js';
import type { TokenStartup } from '../token/client-auth/index.js';
import type { TokenEndpoint } from '../token/discovery/index.js';
import { listen } from './listeners/listen.js';
import { createMemoryControl } from '../overload/memory-control.js';
import { Readiness } from './readiness.js';
import { shutdown, StopList } from './shutdown.js';
import { createRoutes } from './routes.js';
import { listenOnSocket, type SocketFile } from './listeners/unix-socket.js';

export interface AppDeps {
  config: Config;
  /** The TLS files as read at start. */
  tls: TlsFiles;
  /** The secret, key or assertion as read at start. */
  token: TokenStartup;
  /** The DPoP mode and key as read at start. */
  dpop: DpopStartup;
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
  /** The proxy listener's address, or its socket's path. */
  readonly proxyAddress: AddressInfo | string;
  readonly adminAddress: AddressInfo;
  /** Graceful shutdown (docs/operations.md, "Shutdown"); resolves with the exit status. */
  shutdown(): Promise<number>;
}

/** Builds the parts from the configuration, wires them, and opens both listeners. */
export async function startApp(deps: AppDeps): Promise<App> {
  const { config, log, clock, registry } = deps;
  const counted = createMetrics(registry, {
    tokenStore: deps.store !== undefined,
    dpop: config.dpop !== 'off',
    tracing: deps.tracing !== undefined,
    runtime: config.metricsRuntime,
  });
  registerBuildInfo(registry, deps.version);
  const stops = new StopList();
  const dispatchers = dispatchersFromSettings(config, deps.tls.material);
  stops.add(() => dispatchers.destroy());
  const tracing = await startTracing(deps.tracing, {
    dispatcher: dispatchers.token,
    gatewayUrl: new URL(config.baseUrl),
    log,
    dropped: counted.spansDropped ?? (() => {}),
  });
  if (tracing !== undefined) stops.add(() => tracing.shutdown());
  const metrics = withTracing(counted, tracing);
  let tls = deps.tls.material;
  const store =
    deps.store &&
    openTokenStore({
      ...deps,
      settings: deps.store,
      fetchTimeoutMs: config.tokenFetchTimeoutMs,
      tls,
      observer: metrics.tokenStore,
      watchFiles: true,
    });
  if (store !== undefined) stops.add(() => store.close());
  const readiness = new Readiness(config.readiness, clock);
  const [wired] = createRoutes({
    ...deps,
    metrics,
    readiness,
    dispatchers,
    stops,
    store,
    clientCertificate: () => tls.cert,
  });
  const { route, configured, configuredTarget, endpoint } = wired!;
  // Rotated TLS files are used by new connections (the store's too); a new client certificate
  // fetches a token at once, as a secret change does.
  stops.add(
    watchTlsFiles({
      config,
      initial: deps.tls,
      clock,
      log,
      onChange: (material, what) => {
        tls = material;
        dispatchers.setTls(material);
        store?.setTls(material);
        if (what === 'client_certificate') configuredTarget?.refreshNow('client certificate changed');
      },
    }),
  );

  const recorder = new Recorder({ observer: metrics, log, accessLog: config.accessLog, tracer: tracing?.requests });
  const callers = createStalledCallers({ sendTimeoutMs: config.upstreamIdleTimeoutMs, recorder, clock });
  const memory = createMemoryControl({ memoryLimitMb: config.memoryLimitMb, action: callers, clock, log });
  stops.add(memory.stop);
  const forward = createForwarder({
    route,
    budget: memory.budget,
    load: memory.load,
    recorder,
    callers,
    log,
    listenOrigin: listenOrigin(config),
  });
  const proxyServer = createProxyServer({ forward, recorder, log, maxHeaderBytes: config.maxHeaderBytes });
  const adminServer = createAdminServer({ registry, log, readiness: readiness.check });

  let socketFile: SocketFile | undefined;
  let proxyAddress: AddressInfo | string;
  let adminAddress: AddressInfo;
  try {
    if (config.listenSocket === undefined) {
      proxyAddress = await listen(
        proxyServer,
        { host: config.listenHost, port: config.listenPort, what: 'the proxy listener (LISTEN_HOST, LISTEN_PORT)' },
        log,
      );
    } else {
      socketFile = await listenOnSocket(proxyServer, { path: config.listenSocket, mode: config.listenSocketMode }, log);
      proxyAddress = socketFile.path;
    }
    adminAddress = await listen(
      adminServer,
      { host: config.adminHost, port: config.adminPort, what: 'the admin listener (ADMIN_HOST, ADMIN_PORT)' },
      log,
    );
  } catch (err) {
    proxyServer.close();
    await socketFile?.remove().catch(() => {});
    await stops.stopAll();
    throw err;
  }
  // The token is fetched once the listeners are up: a listener that cannot open costs the
  // identity provider nothing.
  configured?.start();
  // Pass-through credentials only: no token is fetched at start, but an issuer's metadata is read
  // then all the same, so its warnings come at start and the first caller does not wait for it.
  if (configured === undefined) readEndpointAtStart(endpoint, log);
  readiness.listen();
  stops.add(memory.watch(() => recorder.served));
  announce({ config, endpoint, log, proxyAddress, adminAddress });

  return {
    proxyAddress,
    adminAddress,
    shutdown: () =>
      shutdown({
        servers: [proxyServer, adminServer],
        delayS: config.shutdownDelayS,
        timeoutS: config.shutdownTimeoutS,
        clock,
        log,
        onBegin: () => readiness.stop(),
        onListenersClosed: async () => {
          await socketFile?.remove().catch((err: unknown) => log.warn({ err }, 'LISTEN_SOCKET could not be removed'));
        },
        onClosed: () => stops.stopAll(),
      }),
  };
}

/**
 * The origin a rewritten `Location` names when the caller sent no `Host`: the listener's. A Unix
 * socket has none: the Location is then an absolute path, which a client resolves against the
 * URL it used, the one that leads back to the socket (docs/unix-socket.md, "What differs from TCP").
 */
function listenOrigin(config: Config): string | undefined {
  if (config.listenSocket !== undefined) return undefined;
  return `http://${config.listenHost.includes(':') ? `[${config.listenHost}]` : config.listenHost}:${config.listenPort}`;
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
  config: Config;
  endpoint: TokenEndpoint;
  log: Log;
  proxyAddress: AddressInfo | string;
  adminAddress: AddressInfo;
}

function announce(opened: Opened): void {
  const { config, endpoint, log, proxyAddress, adminAddress } = opened;
  if (typeof proxyAddress === 'string') {
    // Connecting takes write permission on the socket file: "other" may write, so every local user may connect.
    if ((Number.parseInt(config.listenSocketMode, 8) & 0o002) !== 0) {
      log.warn(
        { socket: proxyAddress, mode: config.listenSocketMode },
        'the proxy socket lets every local user connect (LISTEN_SOCKET_MODE): anyone who can reach it uses the configured credentials',
      );
    }
  } else if (!isLoopbackHost(config.listenHost)) {
    log.warn({ host: config.listenHost }, 'the proxy listener is not on loopback: anyone who can reach it uses the configured credentials');
  }
  log.info(
    {
      proxy:
        typeof proxyAddress === 'string'
          ? { socket: proxyAddress, mode: config.listenSocketMode }
          : { host: proxyAddress.address, port: proxyAddress.port },
      admin: { host: adminAddress.address, port: adminAddress.port },
      gateway: config.baseUrl,
      tokenUrl: endpoint.url === undefined ? undefined : displayTokenUrl(endpoint.url),
      issuer: endpoint.issuer,
    },
    'listeners up',
  );
}
