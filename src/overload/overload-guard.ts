/**
 * Load shedding near the memory limit, as Envoy's overload manager does it: a sampler measures
 * the process's memory as the kernel counts it for the kill (memory-limit.ts) and, above 90 % of
 * the limit, sets the flag the request path reads for every new request (`LoadShedding`): new
 * requests are answered `503 overloaded` until memory falls below 80 %, while the requests in
 * flight continue, but for those whose callers have taken nothing of their answer for 5 s, which
 * are ended (`OverloadAction`), and the admin listener answers as ever. When shedding starts the heap is
 * compacted at once, and again every second while it lasts (when the process has V8's `gc()`:
 * v8-collector.ts): shed requests are requests, so the release after a quiet moment
 * (memory-release.ts) would never come, and the memory the burst left would keep the proxy
 * shedding (docs/operations.md, "When memory runs short").
 */
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';

/** Whether the process is near its memory limit: asked once for each new request. */
export interface LoadShedding {
  /** True while new requests are answered `503 overloaded`; a field read, set by a sampler. */
  readonly shedding: boolean;
}

/** A process never shed: no limit, `MEMORY_LIMIT_MB=0`, and tests that need no guard. */
export const NEVER_SHED: LoadShedding = { shedding: false };

/**
 * What the guard may do to the requests in flight while it sheds (Envoy's
 * `reset_high_memory_stream`): the request path implements it (proxy/stalled-callers.ts).
 */
export interface OverloadAction {
  /**
   * Ends the exchanges whose callers have taken no byte of their answer for `idleMs`, those
   * holding the most unsent answer first, until those ended held `bytes`; returns how many.
   */
  endStalled(bytes: number, idleMs: number): number;
}

/** While shedding, exchanges whose callers have taken nothing for this long are ended. */
export const RESET_IDLE_MS = 5_000;

/** New requests are shed above this share of the limit... */
export const SHED_ABOVE = 0.9;
/** ...until memory falls below this one. */
export const SERVE_BELOW = 0.8;
/** How far above where shedding ended on what is held the kernel's count may grow before it starts again. */
const KEPT_MARGIN = 0.02;
/** Above this share memory is sampled ten times a second, below it once. */
export const WATCH_CLOSELY_ABOVE = 0.7;
const SLOW_SAMPLE_MS = 1_000;
const FAST_SAMPLE_MS = 100;
/** While shedding, the heap is compacted at most this often. */
const COMPACT_EVERY_MS = 1_000;

export interface OverloadGuardOptions {
  /** The memory the proxy must stay under, in bytes. */
  limitBytes: number;
  /** Memory in use now, as the kernel counts it for the kill, in bytes. */
  usage: () => number;
  /**
   * Memory the process holds, less what its malloc keeps for reuse (held-memory.ts): given when
   * the malloc keeps what is freed (glibc's), and then shedding also ends when it falls below 80 %.
   */
  held?: () => number;
  /** A full, compacting collection (v8-collector.ts); undefined without `--expose-gc`. */
  compact: (() => void) | undefined;
  /** The overload action, taken at every sample while shedding lasts. */
  action?: OverloadAction;
  clock: Clock;
  log: Log;
}

export interface OverloadGuard extends LoadShedding {
  stop(): void;
}

const MB = 1024 * 1024;
const RESET_MESSAGE =
  'memory above 80 % of its limit while shedding: ending the exchanges whose callers have taken nothing for ' + `${RESET_IDLE_MS / 1000} s`;

/** Starts sampling at once; the timer never keeps the process alive. */
export function startOverloadGuard(options: OverloadGuardOptions): OverloadGuard {
  const { limitBytes, usage, held, compact, action, clock, log } = options;
  let timer: unknown;
  let lastCompact = -Infinity;
  /** The overload action is logged once a shedding period: its count is in the metrics. */
  let actionLogged = false;
  let endedSinceCompact = false;
  /**
   * After shedding ended on what is held, the kernel's count it ended at, plus a margin: the
   * malloc reuses what it keeps before it asks the system for more, so the count grows past it
   * only once the process holds more again, and shedding starts again there, or once what is
   * held passes 90 % (the floor may lie above the limit itself).
   */
  let keptFloor = 0;
  const guard = {
    shedding: false,
    stop: () => clock.clearTimeout(timer),
  };
  const mb = (bytes: number): number => Math.round(bytes / MB);

  const sample = (): void => {
    const used = usage();
    const share = used / limitBytes;
    if (share < SERVE_BELOW) keptFloor = 0;
    // After shedding ended on what is held, new load may reuse what malloc keeps and never move
    // the kernel's count: it starts again when what is held passes 90 % as well.
    const heldAgain = keptFloor > 0 && held !== undefined && held() > SHED_ABOVE * limitBytes;
    if (!guard.shedding && share > SHED_ABOVE && (used > keptFloor || heldAgain)) {
      guard.shedding = true;
      actionLogged = false;
      log.warn(
        { usedMb: mb(used), limitMb: mb(limitBytes) },
        'memory above 90 % of its limit: new requests are answered 503 overloaded until it falls below 80 %',
      );
    } else if (guard.shedding && share < SERVE_BELOW) {
      guard.shedding = false;
      log.info({ usedMb: mb(used), limitMb: mb(limitBytes) }, 'memory below 80 % of its limit: new requests are served again');
    } else if (guard.shedding && held !== undefined && held() < SERVE_BELOW * limitBytes) {
      guard.shedding = false;
      keptFloor = used + KEPT_MARGIN * limitBytes;
      log.info(
        { usedMb: mb(used), heldMb: mb(held()), limitMb: mb(limitBytes) },
        'memory held below 80 % of its limit (the rest is kept by malloc for reuse): new requests are served again',
      );
    }
    if (guard.shedding && compact !== undefined && (endedSinceCompact || clock.now() - lastCompact >= COMPACT_EVERY_MS)) {
      lastCompact = clock.now();
      compact();
    }
    if (guard.shedding && action !== undefined) {
      const ended = action.endStalled(used - SERVE_BELOW * limitBytes, RESET_IDLE_MS);
      if (ended > 0 && !actionLogged) {
        actionLogged = true;
        log.warn({ ended, usedMb: mb(used), limitMb: mb(limitBytes) }, RESET_MESSAGE);
      }
      // What they held is freed once their sockets have closed: compacted at the next sample.
      endedSinceCompact = ended > 0;
    }
    timer = clock.setTimeout(sample, share > WATCH_CLOSELY_ABOVE ? FAST_SAMPLE_MS : SLOW_SAMPLE_MS);
  };
  sample();
  return guard;
}
