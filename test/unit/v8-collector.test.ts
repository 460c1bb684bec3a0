import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { v8Collector } from '../../src/overload/v8-collector.js';

/** Bytes held in ArrayBuffers (Buffers) by this process, freed or not yet collected. */
const bufferBytes = (): number => process.memoryUsage().arrayBuffers;
const MB = 1024 * 1024;

/**
 * vitest runs the tests without --expose-gc: the `gc()` the flag would give is taken here, for the
 * test alone, from a V8 context made by the test (never by the proxy), and handed in as the
 * process's own.
 */
function takeGc(): unknown {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc');
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

describe("V8's collector", () => {
  it('is none when the process has no gc(): started without --expose-gc, memory is left to V8', () => {
    const contexts = getHeapStatistics().number_of_native_contexts;
    expect(v8Collector({})).toBeUndefined();
    expect(v8Collector(globalThis)).toBeUndefined();
    // No V8 context was made to take one.
    expect(getHeapStatistics().number_of_native_contexts).toBe(contexts);
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
  });

  const exposed = { gc: takeGc() };

  it('frees the Buffers that died young with a young-generation collection', () => {
    const collector = v8Collector(exposed)!;
    collector.young();
    collector.young();
    const before = bufferBytes();
    for (let i = 0; i < 256; i++) Buffer.allocUnsafeSlow(64 * 1024).fill(1);
    expect(bufferBytes()).toBeGreaterThan(before + 15 * MB);
    // The second collection finishes what the first one's sweeper left (the buffers are freed
    // concurrently after each scavenge).
    collector.young();
    collector.young();
    expect(bufferBytes()).toBeLessThan(before + 2 * MB);
  });

  it('runs a full collection that frees what no young collection reaches', async () => {
    const collector = v8Collector(exposed)!;
    const ref = ((): WeakRef<object> => new WeakRef({ payload: 'x'.repeat(1024) }))();
    // A WeakRef's target is held to the end of the job that made it.
    await new Promise((resolve) => setImmediate(resolve));
    collector.full();
    expect(ref.deref()).toBeUndefined();
  });
});
