import type { Server } from 'node:http';
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { ReadBudget } from '../proxy/memory.js';
import { startMemoryRelease } from '../telemetry/memory-release.js';
import { createReadBudget } from '../telemetry/read-budget.js';
import { v8Collector } from '../telemetry/v8-collector.js';
import type { Stop } from './shutdown.js';

export interface MemoryBoundOptions {
  clock: Clock;
  log: Log;
}

/** What the request path is handed, and how the rest starts and stops. */
export interface MemoryBound {
  budget: ReadBudget;
  /** Starts the release after bursts, counting the listener's requests; returns how to stop it. */
  watch(proxyServer: Server): Stop;
}

/**
 * The proxy's memory bound (docs/performance.md, "Memory under large bodies"): the read budget the
 * request path spends, and the release of memory after a burst.
 */
export function createMemoryBound(options: MemoryBoundOptions): MemoryBound {
  const { clock, log } = options;
  const collector = v8Collector();
  return {
    budget: createReadBudget(collector.young),
    watch(proxyServer) {
      let served = 0;
      proxyServer.on('request', () => {
        served += 1;
      });
      const release = startMemoryRelease({ clock, log, served: () => served, release: collector.full });
      return () => release.stop();
    },
  };
}
