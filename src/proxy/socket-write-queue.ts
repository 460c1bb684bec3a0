import type { ServerResponse } from 'node:http';

/**
 * The one place the proxy reads inside Node's sockets. The bytes of the write under way that the
 * kernel has not taken yet: it shrinks as a caller takes part of a write, which a response's
 * public `writableLength` shows only once the whole write is taken. Node's own socket timeout
 * reads the same count to tell a slow write from a stalled one. Node has no public form of it:
 * this reads the libuv stream handle's `writeQueueSize` (checked on Node 22.x and 24.x), and
 * test/unit/node-socket-queue.test.ts fails first should a Node rename or drop it.
 */
export function queuedBytes(res: ServerResponse): number {
  return (res.socket as { _handle?: { writeQueueSize?: number } } | null)?._handle?.writeQueueSize ?? 0;
}
