import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import { heldMemory } from './held-memory.js';
import { mallocKeepsFreedMemory, readContainerMemory, type ContainerMemory } from './memory-limit.js';
import { startMemoryRelease } from './memory-release.js';
import { type LoadShedding, NEVER_SHED, type OverloadAction, SHED_ABOVE, startOverloadGuard } from './overload-guard.js';
import { createReadBudget, NO_BUDGET, type ReadBudget } from './read-budget.js';
import { v8Collector } from './v8-collector.js';

export interface MemoryControlOptions {
  /** `MEMORY_LIMIT_MB`: unset for the container's limit, 0 for no shedding. */
  memoryLimitMb: number | undefined;
  clock: Clock;
  log: Log;
  /** The container's memory as its cgroup tells it; read from the running system by default. */
  container?: ContainerMemory;
  /** What the guard may end while it sheds: the exchanges whose callers take nothing. */
  action?: OverloadAction;
  /** V8's `gc()` as the process was given it; `globalThis` by default. */
  global?: { gc?: unknown };
}

/** What the request path is handed, and how the rest starts and stops. */
export interface MemoryControl {
  budget: ReadBudget;
  load: LoadShedding;
  /** Starts the release after bursts; `served` counts the proxy's requests so far. Returns how to stop it. */
  watch(served: () => number): () => void;
  /** Stops the shedding guard's sampling. */
  stop(): void;
}

const MB = 1024 * 1024;

/**
 * The proxy's memory control (docs/performance.md, "Memory under large bodies"; docs/operations.md,
 * "When memory runs short"): the read budget the request path spends, the release of memory after
 * a burst, and the shedding guard near the limit, which starts sampling at once. The first two,
 * and the compaction while shedding, need V8's `gc()` (`--expose-gc`): without it memory is left
 * to V8 alone, and the proxy says so once at start.
 */
export function createMemoryControl(options: MemoryControlOptions): MemoryControl {
  const { clock, log } = options;
  const collector = v8Collector(options.global);
  if (collector === undefined) {
    log.info(
      {},
      'started without --expose-gc: memory is left to V8 alone (no read budget, no compaction after a burst or while ' +
        'shedding), so large bodies may take the proxy about 100 MB higher; start with NODE_OPTIONS=--expose-gc as the image, ' +
        'the chart and npm start do (docs/performance.md, "Memory under large bodies")',
    );
  }
  const guard = startGuard(options, collector?.full);
  return {
    budget: collector === undefined ? NO_BUDGET : createReadBudget(collector.young),
    load: guard ?? NEVER_SHED,
    watch(served) {
      if (collector === undefined) return () => {};
      const release = startMemoryRelease({ clock, log, served, release: collector.full });
      return () => release.stop();
    },
    stop: () => guard?.stop(),
  };
}

/** The shedding guard, or undefined when there is no limit or `MEMORY_LIMIT_MB=0` turns it off. */
function startGuard(options: MemoryControlOptions, compact: (() => void) | undefined): (LoadShedding & { stop(): void }) | undefined {
  const { memoryLimitMb, action, clock, log } = options;
  if (memoryLimitMb === 0) return undefined;
  const container = options.container ?? readContainerMemory();
  const limitBytes = memoryLimitMb === undefined ? container.limitBytes : memoryLimitMb * MB;
  if (limitBytes === undefined) {
    log.debug({}, 'no memory limit (no MEMORY_LIMIT_MB, no cgroup limit): nothing is shed');
    return undefined;
  }
  // Memory as the kernel counts it for the kill: the cgroup's when it has a limit, else the resident
  // set; on a malloc that keeps what is freed, shedding ends on what the process holds (held-memory.ts).
  const kernel = (): number => container.usageBytes() ?? process.memoryUsage.rss();
  const keeps = mallocKeepsFreedMemory() === true;
  const held = keeps
    ? heldMemory(() => ({ ...process.memoryUsage(), kernel: kernel(), sockets: container.socketBytes() ?? 0 }))
    : undefined;
  const guard = startOverloadGuard({ limitBytes, usage: kernel, held, compact, action, clock, log });
  const from = memoryLimitMb === undefined ? container.source : 'MEMORY_LIMIT_MB';
  log.info(
    {
      limitMb: Math.round(limitBytes / MB),
      from,
      endsOn: keeps ? 'memory held, less what malloc keeps' : 'memory as the kernel counts it',
    },
    `memory limit: new requests are shed above ${SHED_ABOVE * 100} % of it`,
  );
  if (guard.shedding) {
    log.warn(
      { limitMb: Math.round(limitBytes / MB) },
      'the idle proxy is already above 90 % of its memory limit: it sheds new requests until memory falls below 80 %; raise the limit',
    );
  }
  return guard;
}
