/**
 * V8's collector, called by the proxy at the moments it knows memory can be given back: a
 * young-generation collection when the read budget is spent (read-budget.ts), a full compacting
 * one after a burst (memory-release.ts) and when shedding starts (overload-guard.ts).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

interface GcOptions {
  type: 'major' | 'minor';
  execution: 'sync';
  flavor?: 'last-resort';
}
type Gc = (options: GcOptions) => void;

export interface Collector {
  /** Whether `--expose-gc` gave the process its `gc()`: without it, a second V8 context is made for one. */
  readonly exposed: boolean;
  /**
   * A young-generation collection (a scavenge, under a millisecond): frees the Buffers that died
   * young, among them every socket read already written on.
   */
  young(): void;
  /** A full collection that also compacts the heap and returns V8's free pages to the system. */
  full(): void;
}

/** `gc()` from a V8 context kept for it, once young collections are asked for without `--expose-gc`. */
let kept: Gc | undefined;

/**
 * V8's `gc()`: the one `--expose-gc` gives (the image, the chart and `npm start` pass the flag),
 * else one taken from a V8 context made for it, the flag set for that context alone and cleared
 * again, so no other context gets `gc`. While a second context lives, the proxy's own code costs
 * more CPU: a few per cent for small requests, half again for 64 KB uploads (bench/BASELINE.md,
 * "CPU per request and the second context", "Plain node and the second context"), so:
 * - a full collection (after a burst, when shedding starts: rare) takes a context made for it and
 *   dropped after it, unless one is kept already;
 * - young collections (every 8 MiB of bodies read: often) keep theirs for the life of the process,
 *   since one made each time costs half a millisecond and is no cheaper to run beside (the
 *   dropped ones live until a full collection). A proxy whose bodies are small never spends the
 *   read budget (read-budget.ts), and so never keeps a context.
 */
export function v8Collector(): Collector {
  return {
    exposed: exposedGc() !== undefined,
    young: () => (exposedGc() ?? (kept ??= gcFromNewContext()))({ type: 'minor', execution: 'sync' }),
    full: () => (exposedGc() ?? kept ?? gcFromNewContext())({ type: 'major', execution: 'sync', flavor: 'last-resort' }),
  };
}

function exposedGc(): Gc | undefined {
  const gc = (globalThis as { gc?: Gc }).gc;
  return typeof gc === 'function' ? gc : undefined;
}

function gcFromNewContext(): Gc {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as Gc;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
