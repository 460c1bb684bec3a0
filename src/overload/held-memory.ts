/**
 * The memory the process holds, as opposed to what its malloc keeps for reuse: what the shedding
 * guard ends shedding on when the process runs on glibc's malloc (docs/operations.md, "When memory
 * runs short"). glibc keeps what the process frees in its arenas (they shrink only from their
 * top), so after a burst the kernel's count stays where the burst took it, though the process
 * holds far less: measured so alone, shedding would last until a restart.
 *
 * Node cannot ask glibc what it keeps, but V8 counts what the process holds of the memory a burst
 * takes: its heap and its external memory (every Buffer, every socket read). What the kernel
 * counts outside V8's heap has grown since the first reading by more than the external memory
 * grew, and by more than the kernel's socket buffers grew where a cgroup is charged for them (a
 * caller that stops reading holds them, and no malloc can hand them out again): that difference is
 * taken for what malloc keeps. The first reading is taken when the
 * measure is made, at start, before any request: taken later, under the load that started the
 * shedding, it would count what malloc kept by then as held, and the measure could stay above
 * 80 % after the burst was over. It errs low on what is held under load (memory of the
 * connections themselves counts as kept), so the guard starts shedding on the kernel's count as
 * ever and uses this measure to end it, and to start it again while what malloc keeps hides new
 * load from the kernel's count (overload-guard.ts).
 */

/** One reading, in bytes: the kernel's count, V8's heap, V8's external memory, and the socket buffers the kernel's count holds. */
export interface MemoryReading {
  kernel: number;
  heapTotal: number;
  external: number;
  /** Part of `kernel` in a cgroup v2 (`sock`); 0 where the kernel's count leaves them out. */
  sockets: number;
}

/** A measure of the memory held, from successive readings of `read`; the one taken now is its baseline. */
export function heldMemory(read: () => MemoryReading): () => number {
  const first = read();
  const base = { outsideHeap: first.kernel - first.heapTotal, external: first.external, sockets: first.sockets };
  return () => {
    const { kernel, heapTotal, external, sockets } = read();
    const outsideHeap = kernel - heapTotal;
    const kept = Math.max(0, outsideHeap - base.outsideHeap - (external - base.external) - (sockets - base.sockets));
    return kernel - kept;
  };
}
