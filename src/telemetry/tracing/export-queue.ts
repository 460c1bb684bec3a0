/**
 * The bounded queue between ended spans and the collector: at most {@link QUEUE_LIMIT} spans wait,
 * one batch is in flight at a time, and a span that finds the queue full, or whose batch the
 * collector refused, failed or did not answer in time, is dropped and counted. Nothing here waits
 * on the request path: a collector that is down or slow costs spans, never a delayed request or
 * memory that grows.
 */
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace';

/** The most spans waiting to be sent. */
export const QUEUE_LIMIT = 2048;
/** The most spans in one export. */
export const BATCH_LIMIT = 512;
/** How often waiting spans are sent, in milliseconds. */
export const EXPORT_INTERVAL_MS = 1000;

/** Sends one batch; resolves true when the collector took it (never rejects). */
export type SendBatch = (spans: ReadableSpan[]) => Promise<boolean>;

/** Creates the queue as the SDK's span processor; `dropped` is told of every span lost. */
export function createExportQueue(send: SendBatch, dropped: (count: number) => void): SpanProcessor {
  let queue: ReadableSpan[] = [];
  let inFlight: Promise<void> | undefined;

  const flush = (): Promise<void> => {
    if (inFlight !== undefined || queue.length === 0) return inFlight ?? Promise.resolve();
    const batch = queue.length <= BATCH_LIMIT ? queue : queue.slice(0, BATCH_LIMIT);
    queue = queue.length <= BATCH_LIMIT ? [] : queue.slice(BATCH_LIMIT);
    inFlight = send(batch).then((taken) => {
      if (!taken) dropped(batch.length);
      inFlight = undefined;
    });
    return inFlight;
  };
  const timer = setInterval(() => void flush(), EXPORT_INTERVAL_MS);
  timer.unref();

  return {
    onStart() {},
    onEnd(span) {
      if (queue.length >= QUEUE_LIMIT) {
        dropped(1);
        return;
      }
      queue.push(span);
      if (queue.length >= BATCH_LIMIT) void flush();
    },
    async forceFlush() {
      while (queue.length > 0 || inFlight !== undefined) await flush();
    },
    async shutdown() {
      clearInterval(timer);
      await flush();
      // What is left is dropped: shutdown does not wait for a collector behind.
      if (queue.length > 0) dropped(queue.length);
      queue = [];
    },
  };
}
