import type * as PerfHooks from 'node:perf_hooks';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { registerBuildInfo } from '../../src/telemetry/build-info.js';
import { EVENT_LOOP_RESOLUTION_MS } from '../../src/telemetry/event-loop-delay.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { REQUEST_DURATION_BOUNDS } from '../../src/telemetry/request-metrics.js';
import { codeSpans, readDoc, rowsOf, section } from '../helpers/docs.js';

/**
 * The event-loop delays the next monitor records: Node's own monitor by default, or samples a
 * test gives (`monitor.next`), so what the gauges make of them is exact on any machine.
 */
const monitor = vi.hoisted(() => ({ next: undefined as PerfHooks.IntervalHistogram | undefined }));
vi.mock('node:perf_hooks', async (importOriginal) => {
  const perfHooks = await importOriginal<typeof PerfHooks>();
  return {
    ...perfHooks,
    monitorEventLoopDelay: (options?: Parameters<typeof perfHooks.monitorEventLoopDelay>[0]) => {
      const given = monitor.next;
      monitor.next = undefined;
      return given ?? perfHooks.monitorEventLoopDelay(options);
    },
  };
});

/**
 * Delays as Node's monitor records them, in nanoseconds: the time between two ticks of its timer,
 * so an on-time tick records the resolution itself. Percentiles by nearest rank.
 */
class RecordedDelays {
  enabled = false;
  constructor(private samples: number[]) {}
  enable(): boolean {
    this.enabled = true;
    return true;
  }
  disable(): boolean {
    this.enabled = false;
    return true;
  }
  reset(): void {
    this.samples = [];
  }
  record(...ms: number[]): void {
    this.samples.push(...ms.map((m) => m * 1e6));
  }
  get count(): number {
    return this.samples.length;
  }
  get min(): number {
    return Math.min(...this.samples);
  }
  get max(): number {
    return Math.max(...this.samples);
  }
  get mean(): number {
    return this.samples.reduce((a, b) => a + b, 0) / this.samples.length;
  }
  get stddev(): number {
    const mean = this.mean;
    return Math.sqrt(this.samples.reduce((a, b) => a + (b - mean) ** 2, 0) / this.samples.length);
  }
  percentile(p: number): number {
    const sorted = [...this.samples].sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
  }
}

/** A monitor for the next registry made, recording `ms` (delays between ticks) before its first scrape. */
function recording(...ms: number[]): RecordedDelays {
  const delays = new RecordedDelays([]);
  delays.record(...ms);
  monitor.next = delays as unknown as PerfHooks.IntervalHistogram;
  return delays;
}

/** The metrics table of docs/operations.md: each metric's type and its label names, sorted. */
const DOCUMENTED = new Map(
  rowsOf(section(readDoc('docs/operations.md'), 'Metrics'), 'metric').map(
    (row) => [codeSpans(row[0]!)[0]!, { type: row[1]!, labels: codeSpans(row[2]!).sort() }] as const,
  ),
);

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

async function scrape(registry: Registry) {
  return parse(await registry.metrics());
}

function labelSets(samples: Sample[], name: string): string[] {
  return [...new Set(samples.filter((s) => s.name === name).map((s) => Object.keys(s.labels).sort().join(',')))];
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

/** Every feature whose metrics are registered only when it is on. */
const EVERY_FEATURE = { tokenStore: true, dpop: true, tracing: true } as const;

/** The process series of the default profile, and their types. */
const ESSENTIALS: Record<string, string> = {
  process_resident_memory_bytes: 'gauge',
  process_cpu_seconds_total: 'counter',
  process_start_time_seconds: 'gauge',
  ...(process.platform === 'linux' ? { process_open_fds: 'gauge' } : {}),
  nodejs_heap_size_used_bytes: 'gauge',
  nodejs_eventloop_lag_p99_seconds: 'gauge',
};

/** What a configured credential's token source tells at its start: nothing held yet. */
const STARTED = { expiresAtMs: 0, usableUntilMs: 0, lastSuccessAtMs: 0, consecutiveFailures: 0, lastError: undefined };

describe('createMetrics', () => {
  it('registers the metrics docs/operations.md names, under their exact names and types (every feature on)', async () => {
    const registry = new Registry();
    createMetrics(registry, EVERY_FEATURE).route('default').configuredToken.onState!(STARTED);
    registerBuildInfo(registry, '1.2.3');
    const { types } = await scrape(registry);
    const ours = Object.fromEntries([...types].filter(([name]) => name.startsWith('ticket_auth_proxy_')));
    expect(ours).toEqual(Object.fromEntries([...DOCUMENTED].map(([name, { type }]) => [name, type])));
  });

  it('registers the process essentials alone by default, under the names prom-client gives them', async () => {
    const registry = new Registry();
    createMetrics(registry);
    const { types, samples } = await scrape(registry);
    expect(Object.fromEntries([...types].filter(([name]) => !name.startsWith('ticket_auth_proxy_')))).toEqual(ESSENTIALS);
    expect(value(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(value(samples, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(value(samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(value(samples, 'process_start_time_seconds')).toBeLessThanOrEqual(Date.now() / 1000);
    if (process.platform === 'linux') expect(value(samples, 'process_open_fds')).toBeGreaterThan(2);
  });

  it("adds prom-client's full default process and Node.js set with the full runtime profile", async () => {
    const registry = new Registry();
    createMetrics(registry, { runtime: 'full' });
    const { types } = await scrape(registry);
    for (const name of Object.keys(ESSENTIALS)) expect(types.has(name), name).toBe(true);
    expect(types.has('process_cpu_user_seconds_total')).toBe(true);
    expect(types.has('nodejs_heap_space_size_used_bytes')).toBe(true);
    expect(types.has('nodejs_gc_duration_seconds')).toBe(true);
    expect(types.has('nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('registers no metric of a feature that is off: DPoP, the token store, tracing', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const { types } = await scrape(registry);
    expect([...types.keys()].filter((n) => /dpop|store|adoption|trace/.test(n))).toEqual([]);
    expect(metrics.spansDropped).toBeUndefined();
    expect(metrics.tokenStore).toBeUndefined();
    const on = new Registry();
    const withAll = createMetrics(on, { ...EVERY_FEATURE, tracing: true });
    withAll.spansDropped!(3);
    const { types: onTypes, samples } = await scrape(on);
    expect([...onTypes.keys()].filter((n) => /dpop|trace/.test(n)).sort()).toEqual([
      'ticket_auth_proxy_dpop_nonce_requests_total',
      'ticket_auth_proxy_dpop_proofs_total',
      'ticket_auth_proxy_trace_spans_dropped_total',
    ]);
    expect(value(samples, 'ticket_auth_proxy_trace_spans_dropped_total')).toBe(3);
  });

  it('labels a status code HTTP does not define by its class, so the code values stay a fixed set', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    metrics.route('default').requests.requestEnded('GET', 200, 0.01);
    metrics.route('default').requests.requestEnded('GET', 299, 0.01);
    metrics.route('default').requests.requestEnded('GET', 598, 0.01);
    metrics.route('default').requests.requestEnded('GET', 599, 0.01);
    metrics.route('default').requests.requestEnded('GET', 499, 0.01);
    const { samples } = await scrape(registry);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '499' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '200' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '2xx' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '5xx' })).toBe(2);
  });

  it('carries exactly the labels docs/operations.md names', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, EVERY_FEATURE);
    registerBuildInfo(registry, '1.2.3');
    // One of each event, so that every labelled series exists.
    metrics.route('default').configuredToken.onState!(STARTED);
    metrics.route('default').configuredToken.onFetch!('success', 0.1);
    metrics.route('default').requests.requestEnded('GET', 200, 0.01);
    metrics.route('default').requests.upstreamUnauthorized(true);
    metrics.route('default').requests.upstreamStalled('request');
    metrics.route('default').setTokenCacheEntries(0);
    metrics.dpop.proofMade('token');
    metrics.dpop.nonceRequested('gateway');
    const { samples } = await scrape(registry);
    expect(DOCUMENTED.size).toBeGreaterThan(0);
    for (const [name, { type, labels }] of DOCUMENTED) {
      if (type === 'histogram') {
        // A histogram's buckets carry `le` beside its labels; its sum and count its labels alone.
        expect(labelSets(samples, `${name}_bucket`), name).toEqual([[...labels, 'le'].sort().join(',')]);
        expect(labelSets(samples, `${name}_count`), name).toEqual([labels.join(',')]);
      } else {
        expect(labelSets(samples, name), name).toEqual([labels.join(',')]);
      }
    }
  });

  it('shows the counts an alert watches for their first increase from the start, at 0, and the gauges at 0', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry).route('default');
    metrics.configuredToken.onState!(STARTED);
    metrics.setTokenCacheEntries(0);
    const { samples } = await scrape(registry);
    const outcomes = samples.filter((s) => s.name === 'ticket_auth_proxy_token_fetches_total').map((s) => s.labels.outcome);
    // A rejected client (TicketAuthProxyCredentialsRejected) and a forced refresh (its 401 replayed) are
    // shown at 0; every other outcome appears when it first happens.
    expect(outcomes).toEqual(['rejected']);
    expect(value(samples, 'ticket_auth_proxy_token_fetches_total', { route: 'default', outcome: 'rejected' })).toBe(0);
    const replayed = samples.filter((s) => s.name === 'ticket_auth_proxy_upstream_unauthorized_total').map((s) => s.labels.replayed);
    expect(replayed).toEqual(['true']);
    expect(value(samples, 'ticket_auth_proxy_upstream_unauthorized_total', { route: 'default', replayed: 'true' })).toBe(0);
    expect(value(samples, 'ticket_auth_proxy_token_expiry_timestamp_seconds', { route: 'default' })).toBe(0);
    expect(value(samples, 'ticket_auth_proxy_token_last_success_timestamp_seconds', { route: 'default' })).toBe(0);
    expect(value(samples, 'ticket_auth_proxy_token_consecutive_failures', { route: 'default' })).toBe(0);
    expect(value(samples, 'ticket_auth_proxy_token_cache_entries', { route: 'default' })).toBe(0);
  });

  it('keeps each route apart: its own series under its name, at most 16 more idle ones for a route added', async () => {
    const series = async (routes: string[]): Promise<number> => {
      const registry = new Registry();
      const metrics = createMetrics(registry);
      for (const name of routes) {
        const route = metrics.route(name);
        // Idle, holding a token: its first fetch succeeded, no request since.
        route.configuredToken.onState!({ ...STARTED, expiresAtMs: 1_767_225_900_000, lastSuccessAtMs: 1_767_225_600_000 });
        route.configuredToken.onFetch!('success', 0.05);
      }
      const { samples } = await scrape(registry);
      return samples.filter((s) => s.name.startsWith('ticket_auth_proxy_')).length;
    };
    const one = await series(['default']);
    expect((await series(['eu', 'us'])) - one).toBeLessThanOrEqual(16);
    const registry = new Registry();
    const metrics = createMetrics(registry);
    metrics.route('eu').requests.requestEnded('GET', 200, 0.01);
    metrics.route('us').configuredToken.onFetch!('timeout', 10);
    const { samples } = await scrape(registry);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'eu', method: 'GET', code: '200' })).toBe(1);
    expect(samples.filter((s) => s.name === 'ticket_auth_proxy_requests_total' && s.labels.route === 'us')).toEqual([]);
    expect(value(samples, 'ticket_auth_proxy_token_fetches_total', { route: 'us', outcome: 'timeout' })).toBe(1);
    expect(
      samples.filter(
        (s) => s.name === 'ticket_auth_proxy_token_fetches_total' && s.labels.route === 'eu' && s.labels.outcome === 'timeout',
      ),
    ).toEqual([]);
  });

  it("has no configured credential's token gauges until its token source starts: none with pass-through credentials alone", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    metrics.route('default').passthroughToken.onFetch!('success', 0.1);
    const before = await scrape(registry);
    expect([...before.types.keys()].filter((n) => /token_(expiry|last_success|consecutive)/.test(n))).toEqual([]);
    metrics.route('default').configuredToken.onState!({
      ...STARTED,
      expiresAtMs: 1_700_000_000_000,
      lastSuccessAtMs: 1_699_999_000_000,
      consecutiveFailures: 0,
    });
    const { samples } = await scrape(registry);
    expect(value(samples, 'ticket_auth_proxy_token_expiry_timestamp_seconds', { route: 'default' })).toBe(1_700_000_000);
    expect(value(samples, 'ticket_auth_proxy_token_last_success_timestamp_seconds', { route: 'default' })).toBe(1_699_999_000);
    expect(value(samples, 'ticket_auth_proxy_token_consecutive_failures', { route: 'default' })).toBe(0);
  });

  it('counts fetches by outcome, from both the configured and pass-through credentials', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    metrics.route('default').configuredToken.onFetch!('success', 0.2);
    metrics.route('default').configuredToken.onFetch!('rejected', 0.05);
    metrics.route('default').passthroughToken.onFetch!('rejected', 0.05);
    metrics.route('default').passthroughToken.onFetch!('timeout', 10);
    const { samples } = await scrape(registry);
    expect(value(samples, 'ticket_auth_proxy_token_fetches_total', { route: 'default', outcome: 'success' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_token_fetches_total', { route: 'default', outcome: 'rejected' })).toBe(2);
    expect(value(samples, 'ticket_auth_proxy_token_fetches_total', { route: 'default', outcome: 'timeout' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_token_fetch_duration_seconds_sum', { route: 'default', outcome: 'timeout' })).toBe(10);
    expect(value(samples, 'ticket_auth_proxy_token_fetch_duration_seconds_count', { route: 'default', outcome: 'rejected' })).toBe(2);
  });

  it("publishes the configured credential's token state in seconds", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    metrics.route('default').configuredToken.onState!({
      ...STARTED,
      expiresAtMs: 1_767_225_900_000,
      lastSuccessAtMs: 1_767_225_600_500,
      consecutiveFailures: 3,
    });
    metrics.route('default').setTokenCacheEntries(12);
    const { samples } = await scrape(registry);
    expect(value(samples, 'ticket_auth_proxy_token_expiry_timestamp_seconds', { route: 'default' })).toBe(1_767_225_900);
    expect(value(samples, 'ticket_auth_proxy_token_last_success_timestamp_seconds', { route: 'default' })).toBe(1_767_225_600.5);
    expect(value(samples, 'ticket_auth_proxy_token_consecutive_failures', { route: 'default' })).toBe(3);
    expect(value(samples, 'ticket_auth_proxy_token_cache_entries', { route: 'default' })).toBe(12);
    expect(metrics.route('default').passthroughToken.onState).toBeUndefined();
  });

  it('counts requests by method and status code, and their duration by method', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    metrics.route('default').requests.requestEnded('GET', 200, 0.02);
    metrics.route('default').requests.requestEnded('GET', 200, 0.03);
    metrics.route('default').requests.requestEnded('GET', 503, 5);
    metrics.route('default').requests.requestEnded('POST', 201, 0.1);
    metrics.route('default').requests.upstreamUnauthorized(true);
    metrics.route('default').requests.upstreamUnauthorized(false);
    metrics.route('default').requests.upstreamUnauthorized(false);
    const { samples } = await scrape(registry);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '200' })).toBe(2);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '503' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'POST', code: '201' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_request_duration_seconds_count', { route: 'default', method: 'GET' })).toBe(3);
    expect(value(samples, 'ticket_auth_proxy_request_duration_seconds_sum', { route: 'default', method: 'POST' })).toBe(0.1);
    expect(value(samples, 'ticket_auth_proxy_upstream_unauthorized_total', { route: 'default', replayed: 'true' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_upstream_unauthorized_total', { route: 'default', replayed: 'false' })).toBe(2);
  });

  it('labels unknown methods other, however many there are', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    metrics.route('default').requests.requestEnded('PROPFIND', 207, 0.01);
    for (let i = 0; i < 100; i++) metrics.route('default').requests.requestEnded(`X-METHOD-${i}`, 404, 0.01);
    metrics.route('default').requests.requestEnded('PROPFIND', 207, 0.01);
    const { samples } = await scrape(registry);
    const methods = new Set(samples.filter((s) => s.name === 'ticket_auth_proxy_requests_total').map((s) => s.labels.method));
    expect(methods).toEqual(new Set(['other']));
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'other', code: '207' })).toBe(2);
    expect(value(samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'other', code: '404' })).toBe(100);
    expect(value(samples, 'ticket_auth_proxy_request_duration_seconds_count', { route: 'default', method: 'other' })).toBe(102);
  });

  it("exports request durations exactly as prom-client's own histogram would, buckets, bounds and all", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const reference = new Registry();
    const histogram = new Histogram({
      name: 'ticket_auth_proxy_request_duration_seconds',
      help: 'reference',
      labelNames: ['route', 'method'],
      buckets: [...REQUEST_DURATION_BOUNDS],
      registers: [reference],
    });
    const seen: [string, number][] = [
      ['GET', 0],
      ['GET', 0.01],
      ['GET', 0.0101],
      ['POST', 0.1],
      ['GET', 9.9],
      ['GET', 10],
      ['GET', 31],
      ['DELETE', 1e-9],
    ];
    for (const [method, seconds] of seen) {
      metrics.route('default').requests.requestEnded(method, 200, seconds);
      histogram.labels('default', method).observe(seconds);
    }
    const ours = (await registry.metrics()).split('\n').filter((l) => l.startsWith('ticket_auth_proxy_request_duration_seconds'));
    const theirs = (await reference.metrics()).split('\n').filter((l) => l.startsWith('ticket_auth_proxy_request_duration_seconds'));
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.sort()).toEqual(theirs.sort());
    // The JSON form (get(), registry.getMetricsAsJSON()) is prom-client's own too.
    const json = async (r: Registry) =>
      (await r.getMetricsAsJSON())
        .find((m) => m.name === 'ticket_auth_proxy_request_duration_seconds')!
        .values.map((v) => JSON.stringify([(v as { metricName?: string }).metricName, v.labels, v.value]))
        .sort();
    expect(await json(registry)).toEqual(await json(reference));
    // Reset as prom-client's own: every series back to zero.
    registry.resetMetrics();
    reference.resetMetrics();
    const afterReset = (text: string): string[] =>
      text.split('\n').filter((l) => l.startsWith('ticket_auth_proxy_request_duration_seconds_count'));
    expect(afterReset(await registry.metrics())).toEqual(afterReset(await reference.metrics()));
  });

  it('adds requests counted since the last scrape at each scrape', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    metrics.route('default').requests.requestEnded('GET', 200, 0.01);
    expect(
      value((await scrape(registry)).samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '200' }),
    ).toBe(1);
    metrics.route('default').requests.requestEnded('GET', 200, 0.01);
    metrics.route('default').requests.requestEnded('GET', 200, 0.01);
    expect(
      value((await scrape(registry)).samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '200' }),
    ).toBe(3);
    expect(
      value((await scrape(registry)).samples, 'ticket_auth_proxy_requests_total', { route: 'default', method: 'GET', code: '200' }),
    ).toBe(3);
  });
});

describe('event-loop delay', () => {
  // Ticks due every resolution: three 1 ms late, one 5 ms late, one 200 ms late, and one 1 ms
  // early (a tick never comes early, but a monitor's first may measure less than the resolution).
  const TICKS = [1, 1, 1, 5, 200, -1].map((late) => EVENT_LOOP_RESOLUTION_MS + late);

  it('reports how late the loop was, not the 100 ms between samples (the full runtime profile: every gauge)', async () => {
    const delays = recording(...TICKS);
    // The spread is not moved by the resolution: it is read as it is.
    const spread = delays.stddev / 1e9;
    const registry = new Registry();
    createMetrics(registry, { runtime: 'full' });
    expect(delays.enabled).toBe(true);
    const { samples } = await scrape(registry);
    const lag = Object.fromEntries(samples.filter((s) => s.name.startsWith('nodejs_eventloop_lag_')).map((s) => [s.name, s.value]));
    expect(lag).toEqual({
      nodejs_eventloop_lag_seconds: expect.any(Number),
      nodejs_eventloop_lag_min_seconds: 0,
      nodejs_eventloop_lag_max_seconds: 0.2,
      nodejs_eventloop_lag_mean_seconds: expect.closeTo((1 + 1 + 1 + 5 + 200 - 1) / 6 / 1000, 9),
      nodejs_eventloop_lag_stddev_seconds: expect.closeTo(spread, 9),
      nodejs_eventloop_lag_p50_seconds: 0.001,
      nodejs_eventloop_lag_p90_seconds: 0.2,
      nodejs_eventloop_lag_p99_seconds: 0.2,
    });
    // A scrape takes the samples it read: the next reads only those taken after it.
    expect(delays.count).toBe(0);
    delays.record(EVENT_LOOP_RESOLUTION_MS + 100);
    expect(Object.fromEntries((await scrape(registry)).samples.map((s) => [s.name, s.value]))).toMatchObject({
      nodejs_eventloop_lag_min_seconds: 0.1,
      nodejs_eventloop_lag_p50_seconds: 0.1,
    });
  });

  it('reports the 99th percentile alone with the default runtime profile', async () => {
    const delays = recording(...TICKS.slice(0, 4));
    const registry = new Registry();
    createMetrics(registry);
    const { samples } = await scrape(registry);
    expect(samples.filter((s) => s.name.startsWith('nodejs_eventloop_lag'))).toEqual([
      { name: 'nodejs_eventloop_lag_p99_seconds', labels: {}, value: 0.005 },
    ]);
    expect(delays.count).toBe(0);
  });
});

describe('the token store metrics', () => {
  it('are registered only when a store is configured', async () => {
    const without = new Registry();
    expect(createMetrics(without).tokenStore).toBeUndefined();
    const { types } = await scrape(without);
    expect([...types.keys()].filter((n) => n.includes('store') || n.includes('adoption'))).toEqual([]);
    const registry = new Registry();
    createMetrics(registry, { tokenStore: true });
    const ours = Object.fromEntries([...(await scrape(registry)).types].filter(([n]) => /store|adoption/.test(n)));
    expect(ours).toEqual({
      ticket_auth_proxy_token_store_up: 'gauge',
      ticket_auth_proxy_token_store_operations_total: 'counter',
      ticket_auth_proxy_token_adoptions_total: 'counter',
      ticket_auth_proxy_token_store_anomalies_total: 'counter',
    });
  });

  it('show every kind of anomaly at 0 from the start, and count each by its kind', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { tokenStore: true });
    metrics.tokenStore!.onAnomaly!('lease_too_long');
    metrics.tokenStore!.onAnomaly!('lease_too_long');
    const kinds = (await scrape(registry)).samples
      .filter((s) => s.name === 'ticket_auth_proxy_token_store_anomalies_total')
      .map((s) => `${s.labels.kind}:${s.value}`);
    expect(kinds.sort()).toEqual(
      ['failure_too_long:0', 'invalid_entry:0', 'invalid_failure:0', 'lease_too_long:2', 'lease_wait_exhausted:0'].sort(),
    );
  });

  it("show every operation's results at 0 from the start, the store up until an operation fails, and count adoptions", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { tokenStore: true });
    let { samples } = await scrape(registry);
    const pairs = samples
      .filter((s) => s.name === 'ticket_auth_proxy_token_store_operations_total')
      .map((s) => `${s.labels.operation}:${s.labels.result}:${s.value}`);
    expect(pairs.sort()).toEqual(
      [
        ...['hit', 'miss', 'invalid', 'error', 'timeout'].map((r) => `read:${r}:0`),
        ...['ok', 'error', 'timeout'].map((r) => `write:${r}:0`),
        ...['ok', 'taken', 'error', 'timeout'].map((r) => `lease:${r}:0`),
        ...['ok', 'error', 'timeout'].map((r) => `delete:${r}:0`),
      ].sort(),
    );
    expect(value(samples, 'ticket_auth_proxy_token_store_up')).toBe(1);
    metrics.tokenStore!.onOperation!('read', 'timeout');
    metrics.tokenStore!.onHealth!(false);
    metrics.route('default').configuredToken.onAdopt!();
    metrics.route('default').passthroughToken.onAdopt!();
    ({ samples } = await scrape(registry));
    expect(value(samples, 'ticket_auth_proxy_token_store_operations_total', { operation: 'read', result: 'timeout' })).toBe(1);
    expect(value(samples, 'ticket_auth_proxy_token_store_up')).toBe(0);
    expect(value(samples, 'ticket_auth_proxy_token_adoptions_total')).toBe(2);
  });
});
