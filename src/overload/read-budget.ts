/**
 * The read budget: how many body bytes the proxy reads into the process between two
 * young-generation collections. Every socket read is a Buffer outside V8's heap that lives until a
 * collection finds it dead, and V8 starts one only after 64 MB more of them: under large bodies,
 * most of the proxy's memory was read buffers already written on (bench/BASELINE.md, "Where the
 * memory goes under large bodies"). The request path reports each body chunk it reads (an answer's
 * from the gateway, an upload's from a caller); when the budget is spent, a scavenge frees the
 * buffers that died since the last one, at once, and the budget starts again. What the process
 * holds in dead buffers is so bounded by the budget, whatever passes through.
 */

/** Where the request path reports the body bytes it reads into the process. */
export interface ReadBudget {
  /** `bytes` of a body were read: a chunk of the gateway's answer, or of a caller's upload. */
  spend(bytes: number): void;
}

/** A budget that is never spent: a process started without `--expose-gc`, and tests that need none. */
export const NO_BUDGET: ReadBudget = { spend: () => {} };

/** The bytes read between two collections: a scavenge costs about half a millisecond. */
export const READ_BUDGET_BYTES = 8 * 1024 * 1024;

/**
 * Reads smaller than this are not counted. A small answer or upload comes with the JavaScript
 * garbage every request makes (its headers, its handler), which starts young-generation
 * collections on its own, and its read buffer dies with them; it is a stream of large reads, with
 * little garbage of V8's own beside them, that piles up buffers until the 64 MB mark. Counted
 * alone, ordinary traffic never spends the budget and never pays for a collection.
 */
export const SMALLEST_COUNTED_READ = 16 * 1024;

/** A budget of `bytes`; `collect` runs a young-generation collection (v8-collector.ts). */
export function createReadBudget(collect: () => void, bytes = READ_BUDGET_BYTES, smallest = SMALLEST_COUNTED_READ): ReadBudget {
  let left = bytes;
  return {
    spend(read) {
      if (read < smallest) return;
      left -= read;
      if (left > 0) return;
      left = bytes;
      collect();
    },
  };
}
