/**
 * The process series a pod exports (docs/operations.md, "Series per pod"). By default the few an
 * operator reads (resident memory, CPU seconds, start time, open descriptors, V8 heap used, event
 * loop lag p99: the dashboard's), under the names prom-client gives them; `METRICS_RUNTIME=full`
 * adds prom-client's whole default set (heap spaces, GC histograms per kind, handles, versions).
 */
import { readdirSync } from 'node:fs';
import { collectDefaultMetrics, Counter, Gauge, type Registry } from 'prom-client';
import { EVENT_LOOP_METRIC_NAMES, registerEventLoopDelay } from './event-loop-delay.js';

/** Which process series are exported: the essentials, or prom-client's full default set. */
export type MetricsRuntime = 'essential' | 'full';

/** Registers the process series of `runtime` on `registry`. */
export function registerProcessMetrics(registry: Registry, runtime: MetricsRuntime): void {
  if (runtime === 'full') {
    // prom-client's event-loop gauges are replaced by ours (event-loop-delay.ts: sampled every
    // 100 ms, the sampling interval taken off); its own monitor gets the longest interval Node
    // allows, so that its timer, which cannot be turned off, never fires in practice.
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 2 ** 31 - 1 });
    for (const name of EVENT_LOOP_METRIC_NAMES) registry.removeSingleMetric(name);
    registerEventLoopDelay(registry, 'all');
    return;
  }
  registerEssentials(registry);
  registerEventLoopDelay(registry, 'p99');
}

/** The essentials, each read when scraped: nothing runs between scrapes. */
function registerEssentials(registry: Registry): void {
  const registers = [registry];
  new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes.',
    registers,
    collect() {
      this.set(process.memoryUsage.rss());
    },
  });
  let reported = 0;
  new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
    registers,
    collect() {
      const { user, system } = process.cpuUsage();
      const seconds = (user + system) / 1e6;
      // CPU time only grows; the counter is moved up by what was spent since the last scrape.
      if (seconds > reported) this.inc(seconds - reported);
      reported = Math.max(reported, seconds);
    },
  });
  new Gauge({
    name: 'process_start_time_seconds',
    help: 'Start time of the process since unix epoch in seconds.',
    registers,
  }).set(Math.floor(Date.now() / 1000 - process.uptime())); // the second it started: never after now
  if (process.platform === 'linux') {
    new Gauge({
      name: 'process_open_fds',
      help: 'Number of open file descriptors.',
      registers,
      collect() {
        try {
          // The directory's own descriptor, open while it is read, is not counted.
          this.set(readdirSync('/proc/self/fd').length - 1);
        } catch {
          // /proc unreadable: the last value stays.
        }
      },
    });
  }
  new Gauge({
    name: 'nodejs_heap_size_used_bytes',
    help: 'Process heap size used from Node.js in bytes.',
    registers,
    collect() {
      this.set(process.memoryUsage().heapUsed);
    },
  });
}
