import type { AddressInfo } from 'node:net';
import type { IncomingMessage, Server } from 'node:http';
import type { Registry } from 'prom-client';
import { createAdminServer } from '../admin/server.js';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import { isLoopbackHost } from '../core/hosts.js';
import { CredentialsRequiredError, ProxyError } from '../core/errors.js';
import type { Log } from '../core/log.js';
import { startMemoryRelease } from '../telemetry/memory-release.js';
import { createMetrics } from '../telemetry/metrics.js';
import { createDispatchers } from '../net/dispatchers.js';
import { watchTlsFiles, type TlsFiles } from '../net/tls-files.js';
import { createForwarder } from '../proxy/forward.js';
import { createProxyServer } from '../proxy/server.js';
import { shutdown } from './shutdown.js';
import { ClientAssertionError, secretClientAuth } from '../token/client-auth.js';
import { configuredCredential } from '../token/configured-credential.js';
import { describeTokenFailure, displayTokenUrl } from '../token/diagnose.js';
import { tokenFetcherFromConfig } from '../token/fetch-token.js';
import { parseBasicCredentials } from '../token/basic-credentials.js';
import { createSourceCache, type SourceCache } from '../token/source-cache.js';
import type { TokenStartup } from '../token/settings.js';
import { TokenSource } from '../token/token-source.js';

export interface AppDeps {
  config: Config;
  /** The TLS files as read at start. */
  tls: TlsFiles;
  /** The secret, key or assertion as read at start. */
  token: TokenStartup;
  log: Log;
  clock: Clock;
  random: () => number;
  registry: Registry;
}

export interface App {
  readonly proxyAddress: AddressInfo;
  readonly adminAddress: AddressInfo;
  /** Graceful shutdown (PRODUCT §10); resolves with the exit status. */
  shutdown(): Promise<number>;
}

function listen(server: Server, port: number, host: string, what: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(new Error(`${what} cannot listen on ${host}:${port} (${err.code ?? err.message})`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Builds the parts from the configuration, wires them, and opens both listeners. */
export async function startApp(deps: AppDeps): Promise<App> {
  const { config, log, clock, random, registry } = deps;
  const metrics = createMetrics(registry);

  const tls = deps.tls.material;
  const dispatchers = createDispatchers({
    gatewayOrigin: new URL(config.baseUrl).origin,
    tokenUrl: config.tokenUrl,
    gatewayConnectTimeoutMs: Math.min(config.upstreamTimeoutMs, 10_000),
    tokenConnectTimeoutMs: config.tokenFetchTimeoutMs,
    proxy: { httpsProxy: config.httpsProxy, httpProxy: config.httpProxy, noProxy: config.noProxy },
    tls,
  });
  // How the configured client proves who it is (TOKEN_AUTH_METHOD, issues 9 and 15).
  const auth = configuredCredential(config, { clock, log, startup: deps.token });
  const fetchToken = tokenFetcherFromConfig(config, dispatchers.token, () => clock.now(), auth.clientAuth);

  let configured: TokenSource | undefined;
  let stopAuthWatch: (() => void) | undefined;
  if (auth.credential !== undefined) {
    configured = new TokenSource({
      label: 'configured',
      credential: auth.credential,
      fetchToken,
      clock,
      random,
      refreshRatio: config.tokenRefreshRatio,
      waitTimeoutMs: config.tokenWaitTimeoutMs,
      log,
      observer: metrics.configuredToken,
      tokenUrl: config.tokenUrl,
    });
    stopAuthWatch = auth.watch(configured);
  }

  // PRODUCT §12.6: rotated TLS files are used by new connections; a new client certificate
  // fetches a token at once, as a secret change does.
  const stopTlsWatch = watchTlsFiles({
    config,
    initial: deps.tls,
    clock,
    log,
    onChange: (material, what) => {
      dispatchers.setTls(material);
      if (what === 'client_certificate' && configured !== undefined) configured.refreshNow('client certificate changed');
    },
  });

  const noCredentials = new CredentialsRequiredError('no credentials are configured; send Basic credentials');
  // PRODUCT §6: callers' own Basic credentials, each with a token source of its own.
  let passthrough: SourceCache | undefined;
  if (config.passthroughBasic) {
    passthrough = createSourceCache({
      max: config.tokenCacheMax,
      fetchToken: tokenFetcherFromConfig(config, dispatchers.token, () => clock.now(), secretClientAuth(config.tokenAuthMethod)),
      clock,
      random,
      refreshRatio: config.tokenRefreshRatio,
      waitTimeoutMs: config.tokenWaitTimeoutMs,
      defaultLifetimeMs: config.tokenDefaultTtlS * 1000,
      log,
      observer: metrics.passthroughToken,
      onSize: (n) => metrics.setTokenCacheEntries(n),
    });
  }
  const cache = passthrough;
  const selectSource = (req: IncomingMessage): TokenSource | ProxyError => {
    if (cache !== undefined) {
      const basic = parseBasicCredentials(req.headers.authorization);
      if (basic instanceof ProxyError) return basic;
      if (basic !== undefined) return cache.sourceFor(basic);
    }
    return configured ?? noCredentials;
  };
  const forward = createForwarder({
    pool: dispatchers.gateway,
    baseUrl: config.baseUrl,
    selectSource,
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    replayBodyLimitBytes: config.replayBodyLimitBytes,
    metrics,
    log,
    accessLog: config.accessLog,
    listenOrigin: `http://${config.listenHost.includes(':') ? `[${config.listenHost}]` : config.listenHost}:${config.listenPort}`,
  });

  let listening = false;
  let stopping = false;
  const proxyServer = createProxyServer({ forward, metrics, log, maxHeaderBytes: config.maxHeaderBytes });
  const adminServer = createAdminServer({
    registry,
    log,
    readiness: () => {
      if (stopping) return 'shutting down';
      if (!listening) return 'starting';
      if (configured !== undefined && configured.current() === undefined) {
        const last = configured.lastError;
        if (last instanceof ClientAssertionError) return `no valid token (${last.message})`;
        return last ? `no valid token (last fetch: ${last.outcome}: ${describeTokenFailure(last, config.tokenUrl)})` : 'no valid token yet';
      }
      return undefined;
    },
  });

  configured?.start();
  let proxyAddress: AddressInfo;
  let adminAddress: AddressInfo;
  try {
    proxyAddress = await listen(proxyServer, config.listenPort, config.listenHost, 'the proxy listener (LISTEN_HOST, LISTEN_PORT)');
    adminAddress = await listen(adminServer, config.adminPort, config.adminHost, 'the admin listener (ADMIN_HOST, ADMIN_PORT)');
  } catch (err) {
    configured?.stop();
    passthrough?.stop();
    stopTlsWatch();
    stopAuthWatch?.();
    proxyServer.close();
    await dispatchers.destroy();
    throw err;
  }
  listening = true;
  let served = 0;
  proxyServer.on('request', () => {
    served += 1;
  });
  const memoryRelease = startMemoryRelease({ clock, log, served: () => served });
  if (!isLoopbackHost(config.listenHost)) {
    log.warn(
      { host: config.listenHost },
      'the proxy listener is not on loopback: anyone who can reach it uses the configured credentials',
    );
  }
  log.info(
    {
      proxy: { host: proxyAddress.address, port: proxyAddress.port },
      admin: { host: adminAddress.address, port: adminAddress.port },
      gateway: config.baseUrl,
      tokenUrl: displayTokenUrl(config.tokenUrl),
    },
    'listeners up',
  );

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
        onBegin: () => {
          stopping = true;
        },
        onClosed: async () => {
          memoryRelease.stop();
          configured?.stop();
          passthrough?.stop();
          stopTlsWatch();
          stopAuthWatch?.();
          await dispatchers.destroy();
        },
      }),
  };
}
