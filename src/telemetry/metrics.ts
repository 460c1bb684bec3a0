import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import type { FetchOutcome } from '../token/errors.js';
import type { ProxyObserver } from '../proxy/observer.js';
import type { DpopObserver } from '../token/dpop/index.js';
import type { TokenStoreObserver } from '../store/index.js';
import type { TokenSourceObserver, TokenState } from '../token/token-source.js';
import { EVENT_LOOP_METRIC_NAMES, registerEventLoopDelay } from './event-loop-delay.js';
import { type DurationSeries, OneLabelHistogram } from './one-label-histogram.js';
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

/** Methods get their own label value; any other method is counted as `other`, so labels stay bounded. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE'] as const;

/** Per-method series: plain numbers on the hot path, handed to prom-client when scraped. */
interface MethodChildren {
  duration: DurationSeries;
  codes: Map<number, RequestCount>;
  label: string;
}

interface RequestCount {
  child: Counter.Internal;
  pending: number;
}

/**
 * The proxy's metrics (docs/operations.md, "Metrics"), registered on an injected registry,
 * label children bound once. They observe the request path (`ProxyObserver`) and the token
 * sources (`TokenSourceObserver`), which own those interfaces.
 */
export interface Metrics extends ProxyObserver {
  /** Observer for the configured credential: counts fetches and publishes its token gauges. */
  readonly configuredToken: TokenSourceObserver;
  /** Observer for pass-through credentials: counts fetches only. */
  readonly passthroughToken: TokenSourceObserver;
  /** Counts DPoP proofs and nonce requests, by server (never a key, a proof or a token). */
  readonly dpop: DpopObserver;
  /** With a shared token store: its health and operations. */
  readonly tokenStore: TokenStoreObserver | undefined;
  setTokenCacheEntries(n: number): void;
}

/** Creates the proxy's metrics, with Node's process metrics, on `registry`; the token store's only when one is configured. */
export function createMetrics(registry: Registry, options: { tokenStore?: boolean } = {}): Metrics {
  registerProcessMetrics(registry);
  const store = options.tokenStore === true ? createStoreMetrics(registry) : undefined;
  const tokens = tokenMetrics(registry, store?.adopted);
  const requests = requestMetrics(registry);
  const cacheEntries = zeroGauge(registry, 'ticket_auth_proxy_token_cache_entries', 'Pass-through credentials whose token is held.');
  return {
    ...tokens,
    ...requests,
    dpop: dpopMetrics(registry),
    tokenStore: store?.observer,
    setTokenCacheEntries(n) {
      cacheEntries.set(n);
    },
  };
}

function zeroGauge(registry: Registry, name: string, help: string): Gauge {
  const gauge = new Gauge({ name, help, registers: [registry] });
  gauge.set(0);
  return gauge;
}

function registerProcessMetrics(registry: Registry): void {
  // prom-client's event-loop gauges are replaced by ours (event-loop-delay.ts: sampled every
  // 100 ms, the sampling interval taken off); its own monitor gets the longest interval Node
  // allows, so that its timer, which cannot be turned off, never fires in practice.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 2 ** 31 - 1 });
  for (const name of EVENT_LOOP_METRIC_NAMES) registry.removeSingleMetric(name);
  registerEventLoopDelay(registry);
}

function tokenMetrics(registry: Registry, onAdopt: (() => void) | undefined): Pick<Metrics, 'configuredToken' | 'passthroughToken'> {
  const fetches = new Counter({
    name: 'ticket_auth_proxy_token_fetches_total',
    help: 'Token requests to the token endpoint, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const fetchDuration = new Histogram({
    name: 'ticket_auth_proxy_token_fetch_duration_seconds',
    help: 'Duration of token requests, by outcome.',
    labelNames: ['outcome'] as const,
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const gauge = (name: string, help: string): Gauge => zeroGauge(registry, name, help);
  const expiry = gauge(
    'ticket_auth_proxy_token_expiry_timestamp_seconds',
    "Unix time at which the configured credential's token expires; 0 when none is held.",
  );
  const lastSuccess = gauge(
    'ticket_auth_proxy_token_last_success_timestamp_seconds',
    "Unix time of the configured credential's last successful token fetch; 0 before the first.",
  );
  const failures = gauge(
    'ticket_auth_proxy_token_consecutive_failures',
    "The configured credential's failed token fetches since its last success.",
  );

  const fetchChildren = new Map(OUTCOMES.map((o) => [o, { count: fetches.labels(o), duration: fetchDuration.labels(o) }]));
  // Known series are exported at 0 from the start (binding a label child does not create one), so
  // an alert on increase() sees the first rejected fetch, not only the second.
  for (const c of fetchChildren.values()) c.count.inc(0);
  const countFetch = (outcome: FetchOutcome, seconds: number): void => {
    const c = fetchChildren.get(outcome)!;
    c.count.inc();
    c.duration.observe(seconds);
  };
  return {
    configuredToken: {
      onFetch: countFetch,
      onAdopt,
      onState(state: TokenState) {
        expiry.set(state.expiresAtMs / 1000);
        lastSuccess.set(state.lastSuccessAtMs / 1000);
        failures.set(state.consecutiveFailures);
      },
    },
    passthroughToken: { onFetch: countFetch, onAdopt },
  };
}

function requestMetrics(registry: Registry): ProxyObserver {
  const requestCounts: RequestCount[] = [];
  const requests = new Counter({
    name: 'ticket_auth_proxy_requests_total',
    help: "Answers on the proxy listener, by method and status code (the proxy's own errors included).",
    labelNames: ['method', 'code'] as const,
    registers: [registry],
    // Requests are counted in plain numbers and added here, when scraped.
    collect() {
      for (const c of requestCounts) {
        if (c.pending === 0) continue;
        c.child.inc(c.pending);
        c.pending = 0;
      }
    },
  });
  const requestDuration = new OneLabelHistogram(
    'ticket_auth_proxy_request_duration_seconds',
    "Time from a request's arrival to the end of its answer, by method.",
    'method',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registry,
  );
  const unauthorized = new Counter({
    name: 'ticket_auth_proxy_upstream_unauthorized_total',
    help: 'Gateway 401 answers, by whether the request was replayed with a new token.',
    labelNames: ['replayed'] as const,
    registers: [registry],
  });

  const stalls = new Counter({
    name: 'ticket_auth_proxy_upstream_stalls_total',
    help:
      'Exchanges ended because a body stayed silent longer than UPSTREAM_IDLE_TIMEOUT_MS, by direction: ' +
      "the caller's request body, the gateway's answer, or the caller's reading of it (send).",
    labelNames: ['direction'] as const,
    registers: [registry],
  });
  const stallChildren = { request: stalls.labels('request'), response: stalls.labels('response'), send: stalls.labels('send') };
  for (const child of Object.values(stallChildren)) child.inc(0);
  const shed = new Counter({
    name: 'ticket_auth_proxy_overload_shed_total',
    help: 'New requests answered 503 overloaded because memory was above 90 % of its limit.',
    registers: [registry],
  });
  const reset = new Counter({
    name: 'ticket_auth_proxy_overload_reset_total',
    help: 'Exchanges ended while shedding because their callers had taken nothing of their answer for 5 s.',
    registers: [registry],
  });

  const methodChildren = new Map<string, MethodChildren>();
  const childrenFor = (method: string): MethodChildren => {
    let c = methodChildren.get(method);
    if (c === undefined) {
      const label = (METHODS as readonly string[]).includes(method) ? method : 'other';
      c = label === method ? { duration: requestDuration.child(label), codes: new Map(), label } : childrenFor('other');
      methodChildren.set(method, c);
    }
    return c;
  };
  for (const m of METHODS) childrenFor(m);
  const replayedTrue = unauthorized.labels('true');
  const replayedFalse = unauthorized.labels('false');
  // Exported at 0 from the start, as the fetch counts are: the first gateway 401 is an increase.
  replayedTrue.inc(0);
  replayedFalse.inc(0);

  return {
    requestEnded(method, status, seconds) {
      const c = methodChildren.get(method) ?? (methodChildren.size < 64 ? childrenFor(method) : childrenFor('other'));
      let count = c.codes.get(status);
      if (count === undefined) {
        count = { child: requests.labels(c.label, String(status)), pending: 0 };
        c.codes.set(status, count);
        requestCounts.push(count);
      }
      count.pending += 1;
      requestDuration.observe(c.duration, seconds);
    },
    upstreamUnauthorized(replayed) {
      (replayed ? replayedTrue : replayedFalse).inc();
    },
    upstreamStalled(direction) {
      stallChildren[direction].inc();
    },
    requestShed() {
      shed.inc();
    },
    exchangeReset() {
      reset.inc();
    },
  };
}

/**
 * DPoP counters by `target` (`token`, `gateway`). A proof is made per forwarded request: counted
 * in plain numbers and added when scraped, as the request counts are.
 */
function dpopMetrics(registry: Registry): DpopObserver {
  const TARGETS = ['token', 'gateway'] as const;
  const proofs = { token: 0, gateway: 0 };
  const proofCounter: Counter<'target'> = new Counter({
    name: 'ticket_auth_proxy_dpop_proofs_total',
    help: 'DPoP proofs signed, by the server they were sent to (token endpoint or gateway).',
    labelNames: ['target'] as const,
    registers: [registry],
    collect() {
      for (const t of TARGETS) {
        proofCounter.labels(t).inc(proofs[t]);
        proofs[t] = 0;
      }
    },
  });
  const nonces = new Counter({
    name: 'ticket_auth_proxy_dpop_nonce_requests_total',
    help: 'Answers asking for a DPoP nonce (use_dpop_nonce), by server (token endpoint or gateway).',
    labelNames: ['target'] as const,
    registers: [registry],
  });
  for (const t of TARGETS) nonces.labels(t).inc(0);
  return {
    proofMade(target) {
      proofs[target] += 1;
    },
    nonceRequested(target) {
      nonces.labels(target).inc();
    },
  };
}
