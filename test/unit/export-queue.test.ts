import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { BATCH_LIMIT, createExportQueue, QUEUE_LIMIT } from '../../src/telemetry/tracing/export-queue.js';

/** A stand-in for an ended span: the queue only holds and hands them on. */
const span = (i: number): ReadableSpan => ({ name: `s${i}` }) as unknown as ReadableSpan;

describe('the export queue', () => {
  it('holds at most its limit while the collector does not answer, one batch in flight, and counts every span it drops', async () => {
    const sent: number[] = [];
    let dropped = 0;
    const queue = createExportQueue(
      (spans) => {
        sent.push(spans.length);
        return new Promise<boolean>(() => {});
      },
      (n) => (dropped += n),
    );
    const total = BATCH_LIMIT + QUEUE_LIMIT + 100;
    for (let i = 0; i < total; i++) queue.onEnd(span(i));
    expect(sent).toEqual([BATCH_LIMIT]);
    expect(dropped).toBe(100);
    // Stops the timer; the export held by the collector never ends.
    void queue.shutdown();
  });

  it('counts a batch the collector refused as dropped, and sends the rest', async () => {
    let dropped = 0;
    const answers = [false, true];
    const sent: number[] = [];
    const queue = createExportQueue(
      (spans) => {
        sent.push(spans.length);
        return Promise.resolve(answers.shift() ?? true);
      },
      (n) => (dropped += n),
    );
    for (let i = 0; i < BATCH_LIMIT + 10; i++) queue.onEnd(span(i));
    await queue.forceFlush();
    expect(sent).toEqual([BATCH_LIMIT, 10]);
    expect(dropped).toBe(BATCH_LIMIT);
    await queue.shutdown();
  });
});
