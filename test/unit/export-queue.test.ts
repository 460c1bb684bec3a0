import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { BATCH_LIMIT, createExportQueue, QUEUE_LIMIT } from '../../src/telemetry/tracing/export-queue.js';

describe('the export queue', () => {
  it('holds at most its limit while the collector does not answer, one batch in flight, and counts every span it drops', async () => {
    const sent: number[] = [];
    let dropped = 0;
    const queue = createExportQueue<number>(
      (spans) => {
        sent.push(spans.length);
        return new Promise<boolean>(() => {});
      },
      (n) => (dropped += n),
    );
    for (let i = 0; i < BATCH_LIMIT; i++) queue.add(i);
    // A full batch is sent on the event loop's next turn, not inside the call that filled it.
    expect(sent).toEqual([]);
    await nextTurn();
    expect(sent).toEqual([BATCH_LIMIT]);
    for (let i = 0; i < QUEUE_LIMIT + 100; i++) queue.add(i);
    await nextTurn();
    expect(sent).toEqual([BATCH_LIMIT]);
    expect(dropped).toBe(100);
    // Stops the timer; the export held by the collector never ends.
    void queue.shutdown();
  });

  it('counts a batch the collector refused as dropped, and sends the rest', async () => {
    let dropped = 0;
    const answers = [false, true];
    const sent: number[] = [];
    const queue = createExportQueue<number>(
      (spans) => {
        sent.push(spans.length);
        return Promise.resolve(answers.shift() ?? true);
      },
      (n) => (dropped += n),
    );
    for (let i = 0; i < BATCH_LIMIT + 10; i++) queue.add(i);
    await queue.flush();
    expect(sent).toEqual([BATCH_LIMIT, 10]);
    expect(dropped).toBe(BATCH_LIMIT);
    await queue.shutdown();
  });

  it('sends a full batch that waited behind the one in flight as soon as that one is answered', async () => {
    const sent: number[][] = [];
    let answer: (taken: boolean) => void = () => {};
    const queue = createExportQueue<number>(
      (spans) => {
        sent.push(spans);
        return new Promise<boolean>((resolve) => (answer = resolve));
      },
      () => {},
    );
    for (let i = 0; i < 2 * BATCH_LIMIT; i++) {
      queue.add(i);
      if (i === BATCH_LIMIT - 1) await nextTurn();
    }
    expect(sent.map((b) => b.length)).toEqual([BATCH_LIMIT]);
    answer(true);
    await nextTurn();
    expect(sent.map((b) => [b.length, b[0]])).toEqual([
      [BATCH_LIMIT, 0],
      [BATCH_LIMIT, BATCH_LIMIT],
    ]);
    answer(true);
    await queue.shutdown();
  });
});
