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
  /**
   * A young-generation collection (a scavenge, under a millisecond): frees the Buffers that died
   * young, among them every socket read already written on.
   */
  young(): void;
  /** A full collection that also compacts the heap and returns V8's free pages to the system. */
  full(): void;
}

/** The process's `gc()`, once found: V8's collector is one for the whole process. */
let found: Gc | undefined;

/**
 * V8's `gc()`: the one `--expose-gc` gives (the image, the chart and `npm start` pass the flag),
 * else one taken, the first time a collection is asked for, from a V8 context made for it and
 * kept for the life of the process: the flag is set for that context alone and cleared again, so
 * no other context gets `gc`. A context made for each collection would cost a millisecond and a
 * megabyte every time the read budget is spent; one kept costs the proxy's code a few per cent
 * of CPU (bench/BASELINE.md, "Where the memory goes under large bodies").
 */
export function v8Collector(): Collector {
  const call = (options: GcOptions): void => {
    found ??= exposedGc() ?? gcFromNewContext();
    found(options);
  };
  return {
    young: () => call({ type: 'minor', execution: 'sync' }),
    full: () => call({ type: 'major', execution: 'sync', flavor: 'last-resort' }),
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
