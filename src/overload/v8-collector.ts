/**
 * V8's collector, called by the proxy at the moments it knows memory can be given back: a
 * young-generation collection when the read budget is spent (read-budget.ts), a full compacting
 * one after a burst (memory-release.ts) and while shedding (overload-guard.ts).
 *
 * It is the `gc()` that `--expose-gc` gives the process (the image, the chart and `npm start` pass
 * the flag). Without the flag there is none: the proxy then makes no collection of its own and
 * leaves memory to V8's own pacing. It never turns V8's flags at run time, nor takes `gc()` from a
 * second V8 context, whose mere presence costs the proxy's own code CPU (bench/BASELINE.md, "Plain
 * node and the second context").
 */

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

/** V8's collector, or undefined when the process was started without `--expose-gc`. */
export function v8Collector(global: { gc?: unknown } = globalThis): Collector | undefined {
  const gc = global.gc;
  if (typeof gc !== 'function') return undefined;
  const collect = gc as Gc;
  return {
    young: () => collect({ type: 'minor', execution: 'sync' }),
    full: () => collect({ type: 'major', execution: 'sync', flavor: 'last-resort' }),
  };
}
