import { createSecureContext, type SecureContext } from 'node:tls';
import { Agent, Dispatcher, EnvHttpProxyAgent, Pool } from 'undici';
import type { TlsMaterial } from './tls-material.js';

/** The egress proxy settings, as curl reads them (docs/networks-and-authentication.md, "An egress proxy"). */
export interface EgressProxy {
  httpsProxy: string | undefined;
  httpProxy: string | undefined;
  noProxy: string | undefined;
}

export interface DispatchersOptions {
  /** `BASE_URL`'s origin: the gateway's connections. */
  gatewayOrigin: string;
  gatewayConnectTimeoutMs: number;
  tokenConnectTimeoutMs: number;
  proxy: EgressProxy;
  tls: TlsMaterial;
}

/**
 * The connections to one gateway, as a route sends on them: rebuilt whole when the TLS material
 * changes, and read at each send, so a request goes straight to undici's pool with no dispatcher
 * of ours in between. A request names the gateway's origin itself (`origin`): an egress proxy's
 * agent needs it; a pool takes its own.
 */
export interface GatewayConnections {
  /** The gateway's origin. */
  readonly origin: string;
  /** The pooled connections. */
  readonly pool: Dispatcher;
  /**
   * The gateway too, but every request on a connection of its own, closed after the answer: for
   * sending a request again after a pooled connection broke under it.
   */
  readonly fresh: Dispatcher;
}

/**
 * The connections to the gateway and to the identity provider (its token endpoint, and the
 * metadata of `ISSUER_URL`), made from the TLS material and the egress proxy; forwarding and
 * token fetching see only these.
 */
export interface Dispatchers {
  /** For the forwarder. */
  readonly gateway: GatewayConnections;
  /**
   * For the identity provider: any origin, since the token endpoint an issuer's metadata names is
   * known only once it has been read, and need not share the issuer's origin.
   */
  readonly token: Dispatcher;
  /**
   * For the identity provider too, for callers' own credentials (pass-through): connections of
   * their own, so the configured credential's fetches never wait behind a flood of them.
   */
  readonly passthroughToken: Dispatcher;
  /**
   * New TLS material (a rotated CA file or client certificate): new connections use it; requests
   * in flight finish on the old connections, which are then closed.
   */
  setTls(tls: TlsMaterial): void;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * A stable dispatcher whose target can be replaced: the token fetcher keeps one object while the
 * connections behind it are rebuilt. A replaced target is closed gracefully
 * (undici's `close` lets the requests it holds finish).
 */
export class SwappableDispatcher extends Dispatcher {
  #target: Dispatcher;

  constructor(target: Dispatcher) {
    super();
    this.#target = target;
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.#target.dispatch(options, handler);
  }

  /** Sends new requests to `next`; the old target finishes what it holds and closes. */
  swap(next: Dispatcher): Promise<void> {
    const old = this.#target;
    this.#target = next;
    return old.close().catch(() => undefined);
  }

  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    const done = this.#target.close();
    if (callback) void done.then(callback, callback);
    else return done;
  }

  override destroy(): Promise<void>;
  override destroy(err: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(err: Error | null, callback: () => void): void;
  override destroy(a?: Error | null | (() => void), b?: () => void): Promise<void> | void {
    const err = typeof a === 'function' ? null : (a ?? null);
    const callback = typeof a === 'function' ? a : b;
    const done = this.#target.destroy(err);
    if (callback) void done.then(callback, callback);
    else return done;
  }
}

/** One secure context per material: built once, not parsed again for every handshake. */
function secureContextFor(tls: TlsMaterial): { secureContext?: SecureContext } {
  if (tls.ca === undefined && tls.cert === undefined) return {};
  return {
    secureContext: createSecureContext({
      ...(tls.ca ? { ca: [...tls.ca] } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert, key: tls.key } : {}),
    }),
  };
}

/**
 * The proxy for `target` as curl chooses it: `HTTPS_PROXY` for `https:`, `HTTP_PROXY` for
 * `http:` (never one for the other); `NO_PROXY` is applied by undici's `EnvHttpProxyAgent`.
 */
function proxyFor(target: URL, proxy: EgressProxy): { httpsProxy: string; httpProxy: string; noProxy: string } | undefined {
  const https = target.protocol === 'https:';
  const uri = https ? proxy.httpsProxy : proxy.httpProxy;
  if (uri === undefined) return undefined;
  return { httpsProxy: https ? uri : '', httpProxy: https ? '' : uri, noProxy: proxy.noProxy ?? '' };
}

/** How a connection is made: the TLS material, the egress proxy, and how long connecting may take. */
interface Connecting {
  readonly tls: TlsMaterial;
  readonly proxy: EgressProxy;
  readonly connectTimeoutMs: number;
}

/** The connections to `target`'s origin: a pool, or the egress proxy's agent its scheme asks for. */
function build(target: URL, how: Connecting, poolOptions: Pool.Options): Dispatcher {
  const { tls, proxy, connectTimeoutMs } = how;
  const connect = { timeout: connectTimeoutMs, ...secureContextFor(tls) };
  const via = proxyFor(target, proxy);
  if (via !== undefined) {
    // CONNECT for https: targets; absolute-form for http: ones (proxyTunnel false). An https:
    // proxy is verified against the same roots (CA_FILE included); no client certificate for it.
    const proxyTls = { timeout: connectTimeoutMs, ...secureContextFor({ ...(tls.ca ? { ca: tls.ca } : {}) }) };
    return new EnvHttpProxyAgent({ ...poolOptions, ...via, connect, requestTls: connect, proxyTls, proxyTunnel: false });
  }
  return new Pool(target.origin, { ...poolOptions, connect });
}

/**
 * Connections to any origin: undici's Agent keeps a dispatcher for each origin it meets, built as
 * the gateway's is (a pool, or the egress proxy its scheme asks for), so an origin known only at
 * run time (the token endpoint an issuer's metadata names) is reached as one named in the settings.
 */
function buildAnyOrigin(how: Connecting, poolOptions: Pool.Options): Dispatcher {
  return new Agent({ factory: (origin) => build(new URL(String(origin)), how, poolOptions) });
}

/**
 * Connections to a token endpoint for callers' own credentials, per route: as many as pass-through
 * fetches may be in flight at once (token/source-cache.ts), apart from the configured credential's four.
 */
export const PASSTHROUGH_TOKEN_CONNECTIONS = 16;

/** Builds the gateway's and the identity provider's dispatchers. */
export function createDispatchers(options: DispatchersOptions): Dispatchers {
  const gatewayTarget = new URL(options.gatewayOrigin);
  // The gateway's pool: kept alive for every method; connections unbounded. An idle connection
  // is kept as long as the gateway's `Keep-Alive: timeout` hint less a second (undici reuses none
  // when that leaves nothing), and without a hint 4 s: below the idle timeouts of common servers
  // (Node's 5 s) and load balancers, so the proxy rarely sends on a connection being closed.
  const gatewayPool: Pool.Options = { keepAliveTimeout: 4_000, keepAliveTimeoutThreshold: 1_000, keepAliveMaxTimeout: 600_000 };
  // undici closes the connection after every answer when pipelining is 0.
  const freshPool: Pool.Options = { pipelining: 0 };
  const tokenPool: Pool.Options = { connections: 4, keepAliveTimeout: 30_000 };
  const passthroughPool: Pool.Options = { connections: PASSTHROUGH_TOKEN_CONNECTIONS, keepAliveTimeout: 30_000 };
  const { proxy } = options;
  const buildGateway = (tls: TlsMaterial): Dispatcher =>
    build(gatewayTarget, { tls, proxy, connectTimeoutMs: options.gatewayConnectTimeoutMs }, gatewayPool);
  const buildFresh = (tls: TlsMaterial): Dispatcher =>
    build(gatewayTarget, { tls, proxy, connectTimeoutMs: options.gatewayConnectTimeoutMs }, freshPool);
  const buildToken = (tls: TlsMaterial, pool = tokenPool): Dispatcher =>
    buildAnyOrigin({ tls, proxy, connectTimeoutMs: options.tokenConnectTimeoutMs }, pool);

  const gateway = { origin: gatewayTarget.origin, pool: buildGateway(options.tls), fresh: buildFresh(options.tls) };
  const token = new SwappableDispatcher(buildToken(options.tls));
  const passthroughToken = new SwappableDispatcher(buildToken(options.tls, passthroughPool));
  const gatewayDispatchers = (): Dispatcher[] => [gateway.pool, gateway.fresh];
  return {
    gateway,
    token,
    passthroughToken,
    setTls(tls) {
      // New requests take the new pools; the old ones finish what they hold and close.
      const old = gatewayDispatchers();
      gateway.pool = buildGateway(tls);
      gateway.fresh = buildFresh(tls);
      for (const d of old) void d.close().catch(() => undefined);
      void token.swap(buildToken(tls));
      void passthroughToken.swap(buildToken(tls, passthroughPool));
    },
    close: async () => {
      await Promise.all([...gatewayDispatchers().map((d) => d.close()), token.close(), passthroughToken.close()]);
    },
    destroy: async () => {
      await Promise.all([...gatewayDispatchers().map((d) => d.destroy()), token.destroy(), passthroughToken.destroy()]);
    },
  };
}

/** The settings the dispatchers are made from (a configuration has them all). */
export interface DispatcherSettings {
  baseUrl: string;
  upstreamTimeoutMs: number;
  tokenFetchTimeoutMs: number;
  httpsProxy: string | undefined;
  httpProxy: string | undefined;
  noProxy: string | undefined;
}

/** The longest a connection to the gateway may take to open, in ms. */
const GATEWAY_CONNECT_TIMEOUT_MS = 10_000;

/**
 * The dispatchers as the settings ask, for the proxy and for `check` alike.
 *
 * Connect timeouts: `UPSTREAM_TIMEOUT_MS` bounds the wait for the gateway's answer head, 30 s by
 * default for slow endpoints; a gateway that cannot even open a connection within 10 s is down
 * or unreachable, and the caller hears so (502) without waiting the whole upstream timeout, which
 * caps it when shorter. `TOKEN_FETCH_TIMEOUT_MS` bounds a whole token request, so its connect may
 * use all of it.
 */
export function dispatchersFromSettings(settings: DispatcherSettings, tls: TlsMaterial): Dispatchers {
  return createDispatchers({
    gatewayOrigin: new URL(settings.baseUrl).origin,
    gatewayConnectTimeoutMs: Math.min(settings.upstreamTimeoutMs, GATEWAY_CONNECT_TIMEOUT_MS),
    tokenConnectTimeoutMs: settings.tokenFetchTimeoutMs,
    proxy: { httpsProxy: settings.httpsProxy, httpProxy: settings.httpProxy, noProxy: settings.noProxy },
    tls,
  });
}

/** Connections to any origin, as the settings' TLS material and egress proxy make them, rebuilt on new material. */
export interface Outbound extends Dispatcher {
  setTls(tls: TlsMaterial): void;
}

/**
 * Connections to any origin the whole proxy reaches on its own account (the trace collector),
 * made as the identity provider's are: the top-level TLS material and the egress proxy.
 */
export function outboundDispatcher(settings: Omit<DispatcherSettings, 'baseUrl' | 'upstreamTimeoutMs'>, tls: TlsMaterial): Outbound {
  const proxy = { httpsProxy: settings.httpsProxy, httpProxy: settings.httpProxy, noProxy: settings.noProxy };
  const build = (material: TlsMaterial): Dispatcher =>
    buildAnyOrigin({ tls: material, proxy, connectTimeoutMs: settings.tokenFetchTimeoutMs }, { connections: 4, keepAliveTimeout: 30_000 });
  const swappable = new SwappableDispatcher(build(tls));
  return Object.assign(swappable, { setTls: (material: TlsMaterial) => void swappable.swap(build(material)) });
}
