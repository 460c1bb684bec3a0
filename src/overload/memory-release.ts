/**
 * Gives memory back after a burst. V8 grows its heap to carry a burst of requests
 * and keeps the pages afterwards: its own memory reducer waits for allocations that an idle
 * sidecar no longer makes, so a proxy that served tens of thousands of requests in a few seconds
 * held about 20 MB more for as long as it then sat idle. Here, when the proxy has served requests
 * and then none for a whole check interval, and its resident memory has grown by more than a
 * threshold since it was last quiet, it runs one compacting collection that returns V8's free
 * pages to the system. A proxy under steady traffic, or whose memory did not grow, never pays
 * for it; one that sits idle pays nothing but a timer. Start-up counts as a burst.
 */
import { getHeapStatistics } from 'node:v8';
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';

export interface MemoryReleaseOptions {
  clock: Clock;
  log: Log;
  /** Requests served so far; compared between checks to tell traffic from quiet. */
  served: () => number;
  /** Resident memory in bytes. */
  rss?: () => number;
  /** A full collection that also returns free pages to the system (v8-collector.ts). */
  release: () => void;
  /** How long without a request counts as quiet. */
  checkIntervalMs?: number;
  /** Growth of resident memory over the last quiet level that is worth a collection. */
  thresholdBytes?: number;
}

export interface MemoryRelease {
  stop(): void;
}

const MB = 1024 * 1024;

/** Starts the check; it runs every `checkIntervalMs` on a timer that never keeps the process alive. */
export function startMemoryRelease(options: MemoryReleaseOptions): MemoryRelease {
  const { clock, log, served } = options;
  const rss = options.rss ?? (() => process.memoryUsage.rss());
  const release = options.release;
  const intervalMs = options.checkIntervalMs ?? 10_000;
  const thresholdBytes = options.thresholdBytes ?? 8 * MB;

  let lastServed = served();
  // Start-up (reading the configuration, loading the modules, the first token fetch) counts as a
  // burst: the first quiet check compacts what it left behind.
  let busySinceQuiet = true;
  let quietRss = 0;
  let timer: unknown;

  const check = (): void => {
    const now = served();
    const busy = now !== lastServed;
    lastServed = now;
    if (busy) {
      busySinceQuiet = true;
    } else {
      const before = rss();
      if (busySinceQuiet && before > quietRss + thresholdBytes) {
        const started = clock.now();
        release();
        const after = rss();
        log.debug(
          {
            rssBeforeMb: Math.round(before / MB),
            rssAfterMb: Math.round(after / MB),
            heapMb: Math.round(getHeapStatistics().total_heap_size / MB),
            ms: clock.now() - started,
          },
          'memory released after a burst',
        );
        quietRss = after;
      } else if (!busySinceQuiet || before < quietRss) {
        quietRss = before;
      }
      busySinceQuiet = false;
    }
    timer = clock.setTimeout(check, intervalMs);
  };
  timer = clock.setTimeout(check, intervalMs);
  return { stop: () => clock.clearTimeout(timer) };
}
