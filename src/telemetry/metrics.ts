import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { FetchOutcome } from '../token/errors.js';
import type { ProxyObserver } from '../proxy/recorder.js';
import type { DpopObserver } from '../token/dpop/index.js';
import type { TokenStoreObserver } from '../store/index.js';
import type { TokenSourceObserver, TokenState } from '../token/token-state.js';
import { dpopMetrics } from './dpop-metrics.js';
import { type MetricsRuntime, registerProcessMetrics } from './process-metrics.js';
import { requestMetrics } from './request-metrics.js';
import { createStoreMetrics } from './store-metrics.js';

const OUTCOMES: readonly FetchOutcome[] = [
  'success',
  'rejected',
  'rate_limited',
  'server_error',
  'network_error',
  'timeout',
  'invalid_response',
];

/**
 * Token fetch durations' bucket bounds, in seconds: a token endpoint answers in tens of
 * milliseconds when well and takes seconds when not; the last bound is the fetch timeout's default.
 */
const FETCH_DURATION_BOUNDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** What a proxy's configuration turns on, and so which metrics it registers. */
export interface MetricsOptions {
  /** A shared token store is configured: its health and operations. */
  tokenStore?: boolean;
  /** `DPOP` is `on` or `required`: proofs and nonce requests. */
  dpop?: boolean;
  /** Traces are exported: the spans dropped. */
  tracing?: boolean;
  /** The process series: the essentials (the default) or prom-client's full set. */
  runtime?: MetricsRuntime;
}

/** One route's metrics: its requests, its configured credential's token, its pass-through credentials'. */
export interface RouteMetrics {
  /** Observer of the route's requests (`ticket_auth_proxy_requests_total` and the others, by route). */
  readonly requests: ProxyObserver;
  /** Observer for its configured credential: counts fetches and publishes its token gauges. */
  readonly configuredToken: TokenSourceObserver;
  /** Observer for its pass-through credentials: counts fetches only. */
  readonly passthroughToken: TokenSourceObserver;
  setTokenCacheEntries(n: number): void;
}

/**
 * The proxy's metrics (docs/operations.md, "Metrics"), registered on an injected registry,
 * label children bound once; a feature that is off registers none. They observe the request path
 * (`ProxyObserver`) and the token sources (`TokenSourceObserver`), which own those interfaces,
 * each route's under its name (the `route` label).
 */
export interface Metrics {
  /** The metrics of the route `name`: made once, on first asking. */
  route(name: string): RouteMetrics;
  /** Observer of the requests no route takes, counted with an empty `route`. */
  unrouted(): ProxyObserver;
  /** Counts DPoP proofs and nonce requests, by server (never a key, a proof or a token); nothing with DPoP off. */
  readonly dpop: DpopObserver;
  /** With a shared token store: its health and operations. */
  readonly tokenStore: TokenStoreObserver | undefined;
  /** With tracing on: counts the spans the export queue dropped. */
  readonly spansDropped: ((count: number) => void) | undefined;
}

const NO_DPOP: DpopObserver = { proofMade: () => {}, nonceRequested: () => {} };

/** Creates the proxy's metrics, with the process series, on `registry`; a feature's only when it is on. */
export function createMetrics(registry: Registry, options: MetricsOptions = {}): Metrics {
  registerProcessMetrics(registry, options.runtime ?? 'essential');
  const store = options.tokenStore === true ? createStoreMetrics(registry) : undefined;
  const tokens = tokenMetrics(registry, store?.adopted);
  const requests = requestMetrics(registry);
  const cacheEntries = new Gauge({
    name: 'ticket_auth_proxy_token_cache_entries',
    help: 'Pass-through credentials whose token is held, by route.',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  const routes = new Map<string, RouteMetrics>();
  return {
    route(name) {
      let metrics = routes.get(name);
      if (metrics === undefined) {
        const entries = cacheEntries.labels(name);
        metrics = {
          requests: requests.route(name),
          ...tokens.route(name),
          setTokenCacheEntries: (n) => entries.set(n),
        };
        routes.set(name, metrics);
      }
      return metrics;
    },
    unrouted: () => requests.unrouted(),
    dpop: options.dpop === true ? dpopMetrics(registry) : NO_DPOP,
    tokenStore: store?.observer,
    spansDropped: options.tracing === true ? spansDroppedCounter(registry) : undefined,
  };
}

function spansDroppedCounter(registry: Registry): (count: number) => void {
  const dropped = new Counter({
    name: 'ticket_auth_proxy_trace_spans_dropped_total',
    help: 'Spans dropped instead of exported: the export queue was full, or the collector failed or was too slow.',
    registers: [registry],
  });
  dropped.inc(0);
  return (count) => dropped.inc(count);
}

/** The token metrics: the observers of each route's credentials, every series under the route's name. */
function tokenMetrics(
  registry: Registry,
  onAdopt: (() => void) | undefined,
): { route(name: string): Pick<RouteMetrics, 'configuredToken' | 'passthroughToken'> } {
  const fetches = new Counter({
    name: 'ticket_auth_proxy_token_fetches_total',
    help: 'Token requests to the token endpoint, by route and outcome.',
    labelNames: ['route', 'outcome'] as const,
    registers: [registry],
  });
  const fetchDuration = new Histogram({
    name: 'ticket_auth_proxy_token_fetch_duration_seconds',
    help: 'Duration of token requests, by route and outcome.',
    labelNames: ['route', 'outcome'] as const,
    buckets: FETCH_DURATION_BOUNDS,
    registers: [registry],
  });
  const gauge = (name: string, help: string): Gauge<'route'> =>
    new Gauge({ name, help, labelNames: ['route'] as const, registers: [registry] });
  // Registered when a configured credential's refresh loop first tells its state (at its start),
  // each route's series then: a proxy with pass-through credentials alone has none, and no alert
  // on a token it never holds.
  let gauges: { expiry: Gauge<'route'>; lastSuccess: Gauge<'route'>; failures: Gauge<'route'> } | undefined;
  const configuredGauges = (): NonNullable<typeof gauges> =>
    (gauges ??= {
      expiry: gauge(
        'ticket_auth_proxy_token_expiry_timestamp_seconds',
        "Unix time at which the configured credential's token expires; 0 when none is held.",
      ),
      lastSuccess: gauge(
        'ticket_auth_proxy_token_last_success_timestamp_seconds',
        "Unix time of the configured credential's last successful token fetch; 0 before the first.",
      ),
      failures: gauge(
        'ticket_auth_proxy_token_consecutive_failures',
        "The configured credential's failed token fetches since its last success.",
      ),
    });
  return {
    route(name) {
      const children = new Map(OUTCOMES.map((o) => [o, { count: fetches.labels(name, o), duration: fetchDuration.labels(name, o) }]));
      // Of the outcomes, the one an alert watches for its first occurrence is exported at 0 from the
      // start (binding a label child does not make a series): the others appear when they happen.
      children.get('rejected')!.count.inc(0);
      const countFetch = (outcome: FetchOutcome, seconds: number): void => {
        const c = children.get(outcome)!;
        c.count.inc();
        c.duration.observe(seconds);
      };
      return {
        configuredToken: {
          onFetch: countFetch,
          onAdopt,
          onState(state: TokenState) {
            const { expiry, lastSuccess, failures } = configuredGauges();
            expiry.labels(name).set(state.expiresAtMs / 1000);
            lastSuccess.labels(name).set(state.lastSuccessAtMs / 1000);
            failures.labels(name).set(state.consecutiveFailures);
          },
        },
        passthroughToken: { onFetch: countFetch, onAdopt },
      };
    },
  };
}
