import { Counter, Gauge, Histogram, collectDefaultMetrics, type Metric, type MetricValue, type Registry } from 'prom-client';
import { EVENT_LOOP_METRIC_NAMES, registerEventLoopDelay } from './event-loop-delay.js';
import type { FetchOutcome } from '../core/errors.js';
import type { TokenSourceObserver, TokenState } from '../token/token-source.js';

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

/** Per-request series: plain numbers on the hot path, handed to prom-client when scraped. */
interface MethodChildren {
  duration: DurationSeries;
  codes: Map<number, RequestCount>;
  label: string;
}

interface RequestCount {
  child: Counter.Internal;
  pending: number;
}

interface DurationSeries {
  /** Observations per bucket (not cumulative); the last one is `+Inf`. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * A histogram with one label whose `observe` is a bucket search and three additions. prom-client's
 * own histogram hashes the label set on every observation, even through a bound child, which at
 * ten thousand requests a second is a measurable share of the proxy's CPU. Registered on the same
 * registry, it is exported in the same text format.
 */
class OneLabelHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, DurationSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  child(labelValue: string): DurationSeries {
    let series = this.series.get(labelValue);
    if (series === undefined) {
      series = { buckets: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
      this.series.set(labelValue, series);
    }
    return series;
  }

  observe(series: DurationSeries, value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    series.buckets[i]! += 1;
    series.sum += value;
    series.count += 1;
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: MetricValue<string>[] }> {
    const values: (MetricValue<string> & { metricName: string })[] = [];
    for (const [labelValue, series] of this.series) {
      if (series.count === 0) continue;
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += series.buckets[i]!;
        const le = i < this.bounds.length ? this.bounds[i]! : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { le, [this.labelName]: labelValue }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: { [this.labelName]: labelValue }, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: { [this.labelName]: labelValue }, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}

/** The proxy's metrics (PRODUCT §8), registered on an injected registry, label children bound once. */
export interface Metrics {
  /** Observer for the configured credential: counts fetches and publishes its token gauges. */
  readonly configuredToken: TokenSourceObserver;
  /** Observer for pass-through credentials: counts fetches only. */
  readonly passthroughToken: TokenSourceObserver;
  observeRequest(method: string, status: number, seconds: number): void;
  upstreamUnauthorized(replayed: boolean): void;
  setTokenCacheEntries(n: number): void;
}

export function createMetrics(registry: Registry): Metrics {
  // prom-client's event-loop gauges are replaced by ours (event-loop-delay.ts: sampled every
  // 100 ms, the sampling interval taken off); its own monitor gets the longest interval Node
  // allows, so that its timer, which cannot be turned off, never fires in practice.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 2 ** 31 - 1 });
  for (const name of EVENT_LOOP_METRIC_NAMES) registry.removeSingleMetric(name);
  registerEventLoopDelay(registry);

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
  const expiry = new Gauge({
    name: 'ticket_auth_proxy_token_expiry_timestamp_seconds',
    help: "Unix time at which the configured credential's token expires; 0 when none is held.",
    registers: [registry],
  });
  const lastSuccess = new Gauge({
    name: 'ticket_auth_proxy_token_last_success_timestamp_seconds',
    help: "Unix time of the configured credential's last successful token fetch; 0 before the first.",
    registers: [registry],
  });
  const failures = new Gauge({
    name: 'ticket_auth_proxy_token_consecutive_failures',
    help: "The configured credential's failed token fetches since its last success.",
    registers: [registry],
  });
  const requestCounts: RequestCount[] = [];
  const requests = new Counter({
    name: 'ticket_auth_proxy_requests_total',
    help: 'Answers on the proxy listener, by method and status code (the proxy\'s own errors included).',
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
    'Time from a request\'s arrival to the end of its answer, by method.',
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
  const cacheEntries = new Gauge({
    name: 'ticket_auth_proxy_token_cache_entries',
    help: 'Pass-through credentials whose token is held.',
    registers: [registry],
  });
  expiry.set(0);
  lastSuccess.set(0);
  failures.set(0);
  cacheEntries.set(0);

  const fetchChildren = new Map(OUTCOMES.map((o) => [o, { count: fetches.labels(o), duration: fetchDuration.labels(o) }]));
  const countFetch = (outcome: FetchOutcome, seconds: number): void => {
    const c = fetchChildren.get(outcome)!;
    c.count.inc();
    c.duration.observe(seconds);
  };
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
  // Known series are exported at 0 from the start (binding a label child does not create one), so
  // an alert on increase() sees the first rejected fetch or gateway 401, not only the second.
  for (const c of fetchChildren.values()) c.count.inc(0);
  replayedTrue.inc(0);
  replayedFalse.inc(0);

  return {
    configuredToken: {
      onFetch: countFetch,
      onState(state: TokenState) {
        expiry.set(state.expiresAtMs / 1000);
        lastSuccess.set(state.lastSuccessAtMs / 1000);
        failures.set(state.consecutiveFailures);
      },
    },
    passthroughToken: { onFetch: countFetch },
    observeRequest(method, status, seconds) {
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
    setTokenCacheEntries(n) {
      cacheEntries.set(n);
    },
  };
}
