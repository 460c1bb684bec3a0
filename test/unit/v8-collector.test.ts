import { getHeapStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { v8Collector } from '../../src/telemetry/v8-collector.js';

/** Bytes held in ArrayBuffers (Buffers) by this process, freed or not yet collected. */
const bufferBytes = (): number => process.memoryUsage().arrayBuffers;
const MB = 1024 * 1024;

describe("V8's collector", () => {
  // vitest runs the tests without --expose-gc: the collector takes gc() from a context of its own.
  it('frees the Buffers that died young with a young-generation collection', () => {
    const collector = v8Collector();
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
    const collector = v8Collector();
    const ref = ((): WeakRef<object> => new WeakRef({ payload: 'x'.repeat(1024) }))();
    // A WeakRef's target is held to the end of the job that made it.
    await new Promise((resolve) => setImmediate(resolve));
    collector.full();
    expect(ref.deref()).toBeUndefined();
  });

  it('takes gc() without --expose-gc from one context of its own, kept, and leaves it unexposed to new contexts', () => {
    const contexts = (): number => getHeapStatistics().number_of_native_contexts;
    v8Collector().full();
    const at = contexts();
    for (let i = 0; i < 8; i++) {
      const collector = v8Collector();
      collector.young();
      collector.full();
    }
    expect(contexts()).toBe(at);
    expect(runInNewContext('typeof gc')).toBe('undefined');
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
  });
});
