import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { queuedBytes } from '../../src/proxy/socket-write-queue.js';

/**
 * src/proxy/socket-write-queue.ts reads a socket's `_handle.writeQueueSize`, the bytes of a write
 * the kernel has not taken, to tell a caller that takes part of a write from one that takes
 * nothing. Node has no public count of it (`writableLength` shows a write only once it is taken
 * whole), and a Node that renamed it would make every slow reader look stopped: this test fails first.
 */
describe("the socket's write queue the stalled-caller check reads", () => {
  it('is a number that holds the bytes a peer that reads nothing has not taken', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const accepted = once(server, 'connection') as Promise<[Socket]>;
    const client = connect((server.address() as { port: number }).port, '127.0.0.1');
    client.pause();
    const [socket] = await accepted;
    try {
      const handle = (socket as unknown as { _handle?: { writeQueueSize?: unknown } })._handle;
      expect(typeof handle?.writeQueueSize).toBe('number');
      // More than loopback's socket buffers take: the rest waits in the write queue.
      socket.write(Buffer.alloc(64 * 1024 * 1024));
      expect(handle!.writeQueueSize as number).toBeGreaterThan(0);
      // As the proxy reads it, through a response on that socket.
      expect(queuedBytes({ socket } as unknown as ServerResponse)).toBe(handle!.writeQueueSize);
    } finally {
      client.destroy();
      socket.destroy();
      server.close();
      await once(server, 'close');
    }
  });
});
