import { describe, expect, it } from 'vitest';
import { heldMemory, type MemoryReading } from '../../src/overload/held-memory.js';

const MB = 1024 * 1024;

type Reading = Omit<MemoryReading, 'sockets'> & { sockets?: number };

/** A measure over readings the test sets, in MB; no socket buffers unless given. */
function measured(first: Reading) {
  let now = first;
  const held = heldMemory(() => ({
    kernel: now.kernel * MB,
    heapTotal: now.heapTotal * MB,
    external: now.external * MB,
    sockets: (now.sockets ?? 0) * MB,
  }));
  return { held: () => held() / MB, set: (r: Reading) => (now = r) };
}

describe('the memory held, less what malloc keeps', () => {
  it('is the kernel count at the first reading', () => {
    expect(measured({ kernel: 70, heapTotal: 15, external: 5 }).held()).toBe(70);
  });

  it('takes its baseline when it is made, not at the first question: asked first under load, it still sees what malloc kept', () => {
    const m = measured({ kernel: 70, heapTotal: 15, external: 5 });
    // The first question comes when shedding starts, at the height of a burst.
    m.set({ kernel: 135, heapTotal: 20, external: 45 });
    expect(m.held()).toBe(115);
    m.set({ kernel: 130, heapTotal: 15, external: 5 });
    expect(m.held()).toBe(70);
  });

  it('takes what the kernel still counts outside the heap after the buffers were freed for what malloc keeps', () => {
    const m = measured({ kernel: 70, heapTotal: 15, external: 5 });
    // A burst: 40 MB of buffers, and 20 MB more outside the heap for the connections.
    m.set({ kernel: 135, heapTotal: 20, external: 45 });
    expect(m.held()).toBe(115);
    // After it: the buffers freed, the heap compacted; glibc keeps all of it.
    m.set({ kernel: 130, heapTotal: 15, external: 5 });
    expect(m.held()).toBe(70);
  });

  it('is the kernel count when malloc gave the memory back', () => {
    const m = measured({ kernel: 70, heapTotal: 15, external: 5 });
    m.set({ kernel: 135, heapTotal: 20, external: 45 });
    m.set({ kernel: 72, heapTotal: 15, external: 5 });
    expect(m.held()).toBe(70);
    // And never more than the kernel counts, when memory falls below where it started.
    m.set({ kernel: 60, heapTotal: 10, external: 5 });
    expect(m.held()).toBe(60);
  });

  it("counts the kernel's socket buffers a cgroup is charged for as held: callers that stop reading hold them, and no malloc reuses them", () => {
    const m = measured({ kernel: 70, heapTotal: 15, external: 5, sockets: 1 });
    // A hundred callers that stopped reading: 40 MB in the kernel's socket buffers, 10 MB of windows.
    m.set({ kernel: 125, heapTotal: 15, external: 15, sockets: 41 });
    expect(m.held()).toBe(120);
    // They are ended: the buffers go with the sockets; what malloc kept of the windows is not held.
    m.set({ kernel: 85, heapTotal: 15, external: 5, sockets: 1 });
    expect(m.held()).toBe(70);
  });
});
