import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import { createServer } from '../core/node-http.js';
import type { Duplex } from 'node:stream';
import { BadRequestError, HeadersTooLargeError, MethodNotAllowedError, type ProxyError } from '../core/errors.js';
import type { Log } from '../core/log.js';
import { rawProblemResponse, sendProblem } from '../core/problem.js';
import type { Forward } from './forward.js';
import type { Recorder } from './recorder.js';

export interface ProxyServerOptions {
  forward: Forward;
  /** Where the refusals made here are recorded (the forwarder records the rest). */
  recorder: Recorder;
  log: Log;
  /** `MAX_HEADER_BYTES`: the largest request head accepted. */
  maxHeaderBytes: number;
}

/** What the listener knows of one caller connection. */
class Connection {
  /** Answers begun on it and not yet closed. */
  inFlight = 0;
  /** The proxy has decided to close it: nothing more is forwarded from it. */
  closing = false;
  /** A refusal waiting for the answers in flight to finish, then written and the connection closed. */
  refusal: string | undefined = undefined;
  /** The last response begun on it. */
  last: ServerResponse | undefined = undefined;

  constructor(readonly socket: Duplex) {}
}

const kConnection = Symbol('connection');
/**
 * A caller's socket, and each response begun on it, point at the connection's state: the one link
 * from Node's objects, so that the listeners below are built once.
 */
type Linked<T> = T & { [kConnection]?: Connection };

/** The state of `socket`'s connection, made on its first request or refusal. */
function connectionOf(socket: Linked<Duplex>): Connection {
  return (socket[kConnection] ??= new Connection(socket));
}

/**
 * The proxy listener: plain HTTP/1.1 on loopback by default. Requests go to the forwarder; the
 * shapes Node hands elsewhere get their problem answer here: `CONNECT` (405) and requests the
 * HTTP parser refuses (431 for an over-long head, else 400). Protocol upgrades are answered by
 * the forwarder: with no `upgrade` listener Node hands them over as ordinary requests, on
 * Node 22 and 24 alike, so an `h2c` offer is simply answered over HTTP/1.1.
 *
 * Once the proxy has decided to close a connection it forwards nothing more from it:
 * a request parsed after an answer that closes the connection is dropped unanswered, and a parse
 * error lets the answers in flight finish before the refusal is written and the connection closed.
 */
export function createProxyServer(options: ProxyServerOptions): Server {
  const { forward, recorder, log } = options;
  const tooLarge = new HeadersTooLargeError(`the request head is larger than MAX_HEADER_BYTES (${options.maxHeaderBytes} bytes)`);
  const server = createServer(
    {
      // No header parsing surprises: reject obsolete line folding and similar shapes (smuggling).
      insecureHTTPParser: false,
      requireHostHeader: false,
      maxHeaderSize: options.maxHeaderBytes,
      keepAliveTimeout: 65_000,
      // A caller gets 10 s for a request head (slowloris), checked every second; the body may
      // stream for as long as it takes (requestTimeout 0: large uploads). docs/forwarding.md, "Limits under abuse".
      headersTimeout: 10_000,
      connectionsCheckingInterval: 1_000,
      requestTimeout: 0,
      // A request without Content-Length or Transfer-Encoding has no body (RFC 9112 §6.3): Node
      // (24.12 and later; older versions ignore the option) hands it over already ended, without
      // the stream events that would say so, which nothing here listens for.
      optimizeEmptyRequests: true,
    } as ServerOptions & { optimizeEmptyRequests?: boolean },
    (req, res) => accept(req, res, false),
  );
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => accept(req, res, true));
  // Any other expectation is ignored, as nginx does (RFC 9110 §10.1.1 allows a 417, which Node
  // would write bare, uncounted): the request is forwarded without its `Expect`, as every request is.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => accept(req, res, false));

  function accept(req: IncomingMessage, res: Linked<ServerResponse>, expectContinue: boolean): void {
    const connection = connectionOf(req.socket);
    if (connection.closing) {
      // Pipelined behind an answer that closes the connection: its answer could never arrive.
      res.shouldKeepAlive = false;
      return;
    }
    connection.inFlight += 1;
    connection.last = res;
    res[kConnection] = connection;
    res.on('close', onResponseClose);
    if (headBytes(req) > options.maxHeaderBytes) {
      // Node's own limit counts the target and the header names and values alone: a head of many
      // short headers passed it at twice the setting. Its body is not read: the connection closes.
      recorder.refused(req.method ?? 'other', 431);
      res.shouldKeepAlive = false;
      sendProblem(res, tooLarge);
    } else forward(req, res, expectContinue);
    if (!res.shouldKeepAlive) connection.closing = true;
  }

  // CONNECT is refused here, and only here: Node hands it to this event, never to the forwarder.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    recorder.refused(req.method ?? 'other', 405);
    socket.on('error', () => {});
    socket.end(rawProblemResponse(new MethodNotAllowedError('CONNECT is not forwarded')));
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    log.debug({ code: err.code }, 'malformed request refused');
    socket.on('error', () => {});
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const refusal: ProxyError =
      err.code === 'HPE_HEADER_OVERFLOW' ? tooLarge : new BadRequestError(`the request could not be parsed (${err.code ?? 'bad request'})`);
    recorder.refused('other', refusal instanceof HeadersTooLargeError ? 431 : 400);
    const connection = connectionOf(socket);
    connection.closing = true;
    connection.refusal = rawProblemResponse(refusal);
    const last = connection.last;
    if (last !== undefined && !last.req.complete && !last.writableFinished) {
      // The error cut the body of the request in flight: its answer can never be complete, so
      // the refusal goes out now (the upstream request is aborted as the connection closes).
      if (last.headersSent) socket.destroy();
      else writeRefusal(connection);
    } else if (connection.inFlight === 0) writeRefusal(connection);
  });
  return server;
}

/** One answer on a connection is done; a refusal waiting for it goes out once none is left. */
function onResponseClose(this: Linked<ServerResponse>): void {
  const connection = this[kConnection]!;
  connection.inFlight -= 1;
  if (connection.inFlight === 0 && connection.refusal !== undefined) writeRefusal(connection);
}

function writeRefusal(connection: Connection): void {
  const { socket, refusal } = connection;
  connection.refusal = undefined;
  if (socket.writable) socket.end(refusal);
  else socket.destroy();
}

/**
 * The bytes of a request head as its sender wrote it at the least: the request line (method,
 * target, `HTTP/1.1`, two spaces and its end), each header line (name, `:`, value, its end: the
 * space after the colon is optional, RFC 9112 §5) and the empty line. What Node strips around a
 * value is not counted, so a head is never counted larger than it was sent.
 */
function headBytes(req: IncomingMessage): number {
  const raw = req.rawHeaders;
  let bytes = req.method!.length + req.url!.length + 14;
  for (let i = 0; i < raw.length; i += 2) bytes += raw[i]!.length + raw[i + 1]!.length + 3;
  return bytes;
}
