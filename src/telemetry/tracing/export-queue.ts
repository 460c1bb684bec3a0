/**
 * The bounded queue between ended spans and the collector: at most {@link QUEUE_LIMIT} spans wait,
 * one batch is in flight at a time, and a span that finds the queue full, or whose batch the
 * collector refused, failed or did not answer in time, is dropped and counted. Nothing here waits
 * on the request path: a collector that is down or slow costs spans, never a delayed request or
 * memory that grows. A batch is encoded and sent from a timer or once it is full, never inside the
 * request that ended the span.
 */

/** The most spans waiting to be sent. */
export const QUEUE_LIMIT = 2048;
/** The most spans in one export. */
export const BATCH_LIMIT = 512;
/** How often waiting spans are sent, in milliseconds. */
export const EXPORT_INTERVAL_MS = 1000;

/** Sends one batch; resolves true when the collector took it (never rejects). */
export type SendBatch<T> = (spans: T[]) => Promise<boolean>;

/** The queue as the tracer sees it. */
export interface ExportQueue<T> {
  /** A span ended: queued, or dropped when the queue is full. */
  add(span: T): void;
  /** Sends everything queued, a batch at a time. */
  flush(): Promise<void>;
  /** Stops the timer, sends one more batch, and drops (and counts) what is left. */
  shutdown(): Promise<void>;
}

/** Creates the queue; `dropped` is told of every span lost. */
export function createExportQueue<T>(send: SendBatch<T>, dropped: (count: number) => void): ExportQueue<T> {
  let queue: T[] = [];
  let inFlight: Promise<void> | undefined;
  let scheduled = false;

  const sendBatch = (): Promise<void> => {
    if (inFlight !== undefined || queue.length === 0) return inFlight ?? Promise.resolve();
    const batch = queue.length <= BATCH_LIMIT ? queue : queue.slice(0, BATCH_LIMIT);
    queue = queue.length <= BATCH_LIMIT ? [] : queue.slice(BATCH_LIMIT);
    inFlight = send(batch).then((taken) => {
      if (!taken) dropped(batch.length);
      inFlight = undefined;
      // A full batch waits behind the one in flight: sent as soon as that one is answered.
      if (queue.length >= BATCH_LIMIT) void sendBatch();
    });
    return inFlight;
  };
  /** A full batch is sent from the event loop's next turn, outside the request that filled it. */
  const sendSoon = (): void => {
    scheduled = false;
    void sendBatch();
  };
  const timer = setInterval(() => void sendBatch(), EXPORT_INTERVAL_MS);
  timer.unref();

  return {
    add(span) {
      if (queue.length >= QUEUE_LIMIT) {
        dropped(1);
        return;
      }
      queue.push(span);
      if (queue.length >= BATCH_LIMIT && !scheduled && inFlight === undefined) {
        scheduled = true;
        setImmediate(sendSoon);
      }
    },
    async flush() {
      while (queue.length > 0 || inFlight !== undefined) await sendBatch();
    },
    async shutdown() {
      clearInterval(timer);
      await sendBatch();
      // What is left is dropped: shutdown does not wait for a collector behind.
      if (queue.length > 0) dropped(queue.length);
      queue = [];
    },
  };
}
