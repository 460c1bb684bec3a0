/**
 * A gateway the test controls byte by byte, on loopback: a `node:net` server that reads HTTP/1.1
 * requests (bodies by `Content-Length`), records each one as it arrives, and lets the test decide
 * per request what happens to the connection: an answer, half an answer and then silence, a
 * close without an answer, or a reset. Its record is the oracle of what the gateway saw.
 */
import { createServer, type Server, type Socket } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  body: string;
  /** Which connection it came on (1, 2, ...), and its place on that connection (1, 2, ...). */
  connection: number;
  onConnection: number;
  /** For a `stream` answer: the body bytes the socket has taken so far, and whether all of them. */
  streamed?: { written: number; done: boolean };
}

export type Action =
  /** A complete answer, after `delayMs` when given; `keepAlive` adds `Keep-Alive: timeout=N` (seconds). */
  | { answer: number; body?: string; keepAlive?: number; delayMs?: number }
  /** The head and half of a `length`-byte body, then silence with the socket open. */
  | { stallAfterHalf: number }
  /** Closes the connection (FIN) without answering. */
  | { close: true }
  /** Resets the connection (RST) without answering. */
  | { reset: true }
  /** Reads on and never answers. */
  | { silent: true }
  /** A 200 whose body of `stream` bytes is written as the connection takes it (back-pressure minded), recorded in `streamed`. */
  | { stream: number };

export interface RawGatewayOptions {
  /** What to do with each request; the record already holds it. */
  act: (req: SeenRequest) => Action;
  /** Closes a connection idle this long (no hint is sent unless an answer asks for one). */
  idleCloseMs?: number;
  /**
   * Runs when the gateway decides to close an idle connection, `closeLagMs` before it does: a
   * request arriving in between is recorded and never answered, as by a server that closes a
   * connection whose request was already on the wire.
   */
  onIdleClose?: () => void;
  closeLagMs?: number;
}

export interface RawGateway {
  url: string;
  port: number;
  /** Every request, in the order it arrived. */
  readonly seen: SeenRequest[];
  /** Connections accepted so far. */
  connections(): number;
  /** Connections open now. */
  open(): number;
  /** Connections the other side (the proxy) closed or reset, with how many requests each had carried. */
  readonly closedByPeer: { connection: number; requests: number }[];
  close(): Promise<void>;
}

/** Starts a raw gateway on loopback. */
export async function startRawGateway(options: RawGatewayOptions): Promise<RawGateway> {
  const seen: SeenRequest[] = [];
  const closedByPeer: { connection: number; requests: number }[] = [];
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    const connection = ++accepted;
    let onConnection = 0;
    let buffer = Buffer.alloc(0);
    let idle: NodeJS.Timeout | undefined;
    let closedHere = false;
    let closing = false;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => {
      sockets.delete(socket);
      clearTimeout(idle);
      if (!closedHere) closedByPeer.push({ connection, requests: onConnection });
    });
    socket.on('end', () => socket.end());
    const armIdle = (): void => {
      if (options.idleCloseMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(() => {
        closing = true;
        options.onIdleClose?.();
        idle = setTimeout(() => {
          closedHere = true;
          socket.end();
        }, options.closeLagMs ?? 0);
      }, options.idleCloseMs);
    };
    armIdle();
    socket.on('data', (chunk: Buffer) => {
      if (!closing) clearTimeout(idle);
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
        const [method = '', path = ''] = lines[0]!.split(' ');
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (buffer.length < end + 4 + length) return;
        const body = buffer.subarray(end + 4, end + 4 + length).toString();
        buffer = buffer.subarray(end + 4 + length);
        const req: SeenRequest = { method, path, headers, body, connection, onConnection: ++onConnection };
        seen.push(req);
        if (closing) return;
        const action = options.act(req);
        if ('answer' in action) {
          const text = action.body ?? `gateway ${action.answer}`;
          const hint = action.keepAlive === undefined ? '' : `Keep-Alive: timeout=${action.keepAlive}\r\n`;
          const answer = `HTTP/1.1 ${action.answer} X\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\n${hint}\r\n${text}`;
          if (action.delayMs === undefined) {
            socket.write(answer);
            armIdle();
          } else {
            setTimeout(() => {
              socket.write(answer);
              armIdle();
            }, action.delayMs);
          }
        } else if ('stallAfterHalf' in action) {
          const half = Math.floor(action.stallAfterHalf / 2);
          socket.write(
            `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${action.stallAfterHalf}\r\n\r\n${'x'.repeat(half)}`,
          );
          return;
        } else if ('stream' in action) {
          stream(socket, req, action.stream);
          return;
        } else if ('close' in action) {
          closedHere = true;
          socket.end();
          return;
        } else if ('reset' in action) {
          closedHere = true;
          socket.resetAndDestroy();
          return;
        } else return;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    connections: () => accepted,
    open: () => sockets.size,
    closedByPeer,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) {
          s.removeAllListeners('close');
          s.destroy();
        }
        server.close(() => resolve());
      }),
  };
}

/** Writes a 200 of `length` bytes of `x`, a 64 KiB chunk at a time as `socket` takes them, into `req.streamed`. */
function stream(socket: Socket, req: SeenRequest, length: number): void {
  const progress = { written: 0, done: false };
  req.streamed = progress;
  socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`);
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const pump = (): void => {
    while (progress.written < length && !socket.destroyed) {
      const n = Math.min(chunk.length, length - progress.written);
      const more = socket.write(n === chunk.length ? chunk : chunk.subarray(0, n));
      progress.written += n;
      if (!more) {
        socket.once('drain', pump);
        return;
      }
    }
    progress.done = progress.written === length;
  };
  pump();
}
