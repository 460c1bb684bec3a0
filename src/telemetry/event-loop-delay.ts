/**
 * The event-loop delay gauges (`nodejs_eventloop_lag_*_seconds`, the names prom-client gives
 * them), sampled every 100 ms instead of prom-client's 10 ms: a 10 ms timer costs about 0.4 s of
 * CPU a minute at idle (bench/BASELINE.md, footprint). Node's `monitorEventLoopDelay` records the
 * time between two ticks of its timer, so every sample is at least the resolution: read as it
 * is, an idle proxy would report 100 ms. Here the resolution is taken off, so the gauges say how
 * late the loop was, as they do at prom-client's 10 ms (less its 10 ms floor).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

/** How often the loop is sampled. */
export const EVENT_LOOP_RESOLUTION_MS = 100;

const NAMES = {
  lag: 'nodejs_eventloop_lag_seconds',
  min: 'nodejs_eventloop_lag_min_seconds',
  max: 'nodejs_eventloop_lag_max_seconds',
  mean: 'nodejs_eventloop_lag_mean_seconds',
  stddev: 'nodejs_eventloop_lag_stddev_seconds',
  p50: 'nodejs_eventloop_lag_p50_seconds',
  p90: 'nodejs_eventloop_lag_p90_seconds',
  p99: 'nodejs_eventloop_lag_p99_seconds',
} as const;

/** The gauges' names, for taking prom-client's own off a registry before these are added. */
export const EVENT_LOOP_METRIC_NAMES: readonly string[] = Object.values(NAMES);

/**
 * Registers the gauges, every one (`all`) or the 99th percentile alone (`p99`, the one the
 * dashboard shows); each scrape reads the samples taken since the last one. The monitor's timer
 * runs until the process ends (it does not keep it alive).
 */
export function registerEventLoopDelay(registry: Registry, which: 'all' | 'p99'): void {
  const histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  histogram.enable();
  const resolutionNs = EVENT_LOOP_RESOLUTION_MS * 1e6;
  const late = (ns: number): number => Math.max(0, ns - resolutionNs) / 1e9;
  const gauge = (name: string, help: string, collect?: (this: Gauge) => void): Gauge =>
    new Gauge({ name, help, registers: [registry], ...(collect ? { collect } : {}) });

  if (which === 'p99') {
    gauge(NAMES.p99, 'The 99th percentile of the recorded event loop delays.', function (this: Gauge) {
      if (histogram.count > 0) this.set(late(histogram.percentile(99)));
      histogram.reset();
    });
    return;
  }
  // Registered first: a scrape starts reading every metric in the registry's order in one
  // synchronous pass, so this collect sets the others before any of them is read.
  const lag: Gauge = gauge(NAMES.lag, 'Lag of event loop in seconds.', () => {
    // As prom-client does: how long a setImmediate waits now, reported at the next scrape.
    const started = process.hrtime.bigint();
    setImmediate(() => lag.set(Number(process.hrtime.bigint() - started) / 1e9));
    if (histogram.count > 0) {
      min.set(late(histogram.min));
      max.set(late(histogram.max));
      mean.set(late(histogram.mean));
      stddev.set(histogram.stddev / 1e9);
      p50.set(late(histogram.percentile(50)));
      p90.set(late(histogram.percentile(90)));
      p99.set(late(histogram.percentile(99)));
    }
    histogram.reset();
  });
  const min = gauge(NAMES.min, 'The minimum recorded event loop delay.');
  const max = gauge(NAMES.max, 'The maximum recorded event loop delay.');
  const mean = gauge(NAMES.mean, 'The mean of the recorded event loop delays.');
  const stddev = gauge(NAMES.stddev, 'The standard deviation of the recorded event loop delays.');
  const p50 = gauge(NAMES.p50, 'The 50th percentile of the recorded event loop delays.');
  const p90 = gauge(NAMES.p90, 'The 90th percentile of the recorded event loop delays.');
  const p99 = gauge(NAMES.p99, 'The 99th percentile of the recorded event loop delays.');
}
