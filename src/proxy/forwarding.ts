import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { BadRequestError } from '../core/errors.js';
import type { Log } from '../core/log.js';
import { sendProblem } from '../core/problem.js';
import type { Authorization } from '../token/authorization.js';
import type { TokenSource } from '../token/token-source.js';

import {
  callerResponseHeaders,
  flatHeaders,
  setAuthorization,
  type ParsedHeaders,
  type RawHeaders,
  type RequestHeaders,
} from './headers.js';
import type { Recorder } from './observer.js';
import { upstreamError } from './upstream-error.js';

/** Shared, built once: everything a forwarded request needs besides itself. */
export interface ForwardContext {
  /** Connection pool to the gateway's origin. */
  readonly pool: Dispatcher;
  /** `BASE_URL` without its trailing slash, path prefix included. */
  readonly baseUrl: string;
  /** The path prefix of `BASE_URL`, without its trailing slash. */
  readonly basePath: string;
  readonly upstreamTimeoutMs: number;
  /** Longest silence inside a request or response body before the exchange is ended. */
  readonly upstreamIdleTimeoutMs: number;
  /** The gateway again, every request on a new connection: for a request sent again after a connection broke. */
  readonly freshPool: Dispatcher;
  readonly replayBodyLimitBytes: number;
  readonly recorder: Recorder;
  readonly log: Log;
  /** Origin for a rewritten `Location` when the caller sent no `Host`. */
  readonly listenOrigin: string;
}

const kForwarding = Symbol('forwarding');
/** A caller's response, pointing back at the forwarding that writes it. */
type ResponseWithForwarding = ServerResponse & { [kForwarding]?: Forwarding };

/**
 * Answers with a problem and records the request. `hasBody`: the request announced a body. A
 * connection whose request body is still unread is closed after the answer rather than read to
 * its end (a refused upload is not taken in); one whose request had no body stays open.
 */
export function answerProblem(
  ctx: ForwardContext,
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
  started: number,
  hasBody: boolean,
): void {
  if (hasBody && !req.complete) res.shouldKeepAlive = false;
  const status = sendProblem(res, err);
  ctx.recorder.answered(req, status, started);
}

/** The caller went away: stop the upstream request. `this` is the response. */
function onCallerClose(this: ResponseWithForwarding): void {
  this[kForwarding]?.callerClosed();
}

/**
 * The caller's connection was silent for `UPSTREAM_IDLE_TIMEOUT_MS` while its request body was
 * being read. `this` is the response: a listener on it keeps Node from closing the socket itself.
 */
function onCallerIdle(this: ResponseWithForwarding): void {
  this[kForwarding]?.callerIdle();
}

/** The caller caught up: read more from the gateway. `this` is the response. */
function onCallerDrain(this: ResponseWithForwarding): void {
  this[kForwarding]?.controller?.resume();
}

/**
 * One forwarded request: an undici dispatch handler that sends the request with a token and
 * streams the gateway's answer into the caller's response, with backpressure both ways. Failures
 * become 502/504 or, once the answer has started, a destroyed connection (never a truncated body
 * that looks complete). It knows nothing of replays: replay.ts extends it.
 */
export class Forwarding implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | undefined;
  /** How the request was last authorised (its token, and the proof maker of a DPoP-bound one). */
  protected auth: Authorization | undefined;
  /** Whether the header list carries a `DPoP` proof from an earlier send. */
  private hasProof = false;
  /** True once the request has ended, one way or another: nothing more is written or recorded. */
  protected finished = false;
  private status = 0;
  /** Answer body bytes still to come by the gateway's `Content-Length`; NaN when it sent none. */
  private remaining = Number.NaN;
  private readonly head: boolean;
  private waitingForDrain = false;
  /** The current attempt was handed to a connection: the gateway may have it. */
  protected sent = false;

  constructor(
    protected readonly ctx: ForwardContext,
    protected readonly req: IncomingMessage,
    private readonly res: ResponseWithForwarding,
    protected readonly headers: RequestHeaders,
    protected readonly source: TokenSource,
    private readonly started: number,
    private readonly expectContinue: boolean,
  ) {
    this.head = req.method === 'HEAD';
    // The proxy's Authorization goes last; send() sets its value.
    headers.forward.push('authorization', '');
    res[kForwarding] = this;
    res.on('close', onCallerClose);
  }

  /** Sends the request at once when a token is held, else once one is fetched. */
  start(): void {
    const auth = this.source.authorization();
    if (auth !== undefined) this.dispatch(auth);
    else this.source.authorize().then(this.dispatch.bind(this), this.fail.bind(this));
  }

  /** Sends the request, streaming the caller's body, authorised with `auth`. */
  dispatch(auth: Authorization): void {
    if (!this.canSend()) return;
    // `100 Continue` is sent once the request is known to be forwarded.
    if (this.expectContinue) this.res.writeContinue();
    // A request body that stays silent is cut after UPSTREAM_IDLE_TIMEOUT_MS: the caller's socket
    // timeout, which Node refreshes on every read and write (no timer of ours per chunk).
    if (this.headers.hasBody && !this.req.complete) this.res.setTimeout(this.ctx.upstreamIdleTimeoutMs, onCallerIdle);
    this.send(auth, this.headers.hasBody ? this.req : null);
  }

  /** No token could be had (or another failure before dispatch). */
  fail(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    if (this.res.destroyed) return this.recordAbort();
    answerProblem(this.ctx, this.req, this.res, err, this.started, this.headers.hasBody);
  }

  callerClosed(): void {
    if (this.res.writableFinished) return;
    this.controller?.abort(new Error('caller closed the connection'));
    if (!this.finished) {
      this.finished = true;
      this.recordAbort();
    }
  }

  /** The caller's connection went silent: ends the exchange if its request body is still unread. */
  callerIdle(): void {
    if (this.req.complete || this.finished) {
      // The body is all here; the wait that followed is the gateway's (UPSTREAM_TIMEOUT_MS).
      this.res.setTimeout(0);
      return;
    }
    this.finished = true;
    this.ctx.recorder.stalled(this.req, 'request', this.ctx.upstreamIdleTimeoutMs);
    this.controller?.abort(new Error('the request body went silent'));
    this.res.destroy();
    // 408 (as nginx logs a request body that timed out), unless an answer had begun.
    this.ctx.recorder.answered(this.req, this.status === 0 ? 408 : this.status, this.started);
  }

  /** The dispatcher for the current attempt: the pool (retry.ts sends a retry on a new connection). */
  protected upstream(): Dispatcher {
    return this.ctx.pool;
  }

  /** False when the request has ended or its caller has gone (then recorded as such). */
  protected canSend(): boolean {
    if (this.finished) return false;
    if (this.res.destroyed) {
      this.callerClosed();
      return false;
    }
    return true;
  }

  protected send(auth: Authorization, body: IncomingMessage | Buffer | null): void {
    this.auth = auth;
    const headers = this.headers.forward;
    this.hasProof = setAuthorization(headers, auth, this.req.method!, this.req.url!, this.hasProof);
    this.sent = false;
    try {
      this.upstream().dispatch(
        {
          path: this.ctx.basePath + this.req.url!,
          method: this.req.method! as Dispatcher.HttpMethod,
          headers,
          body,
          headersTimeout: this.ctx.upstreamTimeoutMs,
          // The longest gap between two chunks of the answer body (undici's default is 300 s).
          bodyTimeout: this.ctx.upstreamIdleTimeoutMs,
          // undici closes the connection after every HEAD (against servers that send a body with a
          // HEAD answer), which costs a new connection, over TLS a full handshake, per HEAD.
          // Its parser still refuses stray bytes on an idle connection ("bad response") and closes
          // it, and the gateway answers HEAD as HTTP says, so HEAD is pooled like the rest.
          reset: this.head ? false : undefined,
        },
        this,
      );
    } catch (err) {
      // The client refused the request itself (a header or method it will not send).
      this.finished = true;
      const code = (err as { code?: string }).code ?? 'invalid';
      answerProblem(
        this.ctx,
        this.req,
        this.res,
        new BadRequestError(`the request cannot be forwarded (${code})`, { cause: err }),
        this.started,
        this.headers.hasBody,
      );
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    this.sent = true;
    if (this.finished) controller.abort(new Error('caller closed the connection'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, parsed: ParsedHeaders): void {
    if (statusCode < 200 || this.finished) return;
    this.status = statusCode;
    const length = parsed['content-length'];
    this.remaining = typeof length === 'string' && !this.head ? Number(length) : Number.NaN;
    const host = this.headers.host;
    const callerOrigin = parsed.location === undefined ? '' : host !== undefined ? `http://${host}` : this.ctx.listenOrigin;
    // undici keeps the parser's raw list on the controller: names as the gateway wrote them.
    const raw = (controller as Dispatcher.DispatchController & { rawHeaders?: RawHeaders }).rawHeaders ?? flatHeaders(parsed);
    this.res.writeHead(statusCode, callerResponseHeaders(raw, this.ctx.baseUrl, callerOrigin, parsed));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.finished) return;
    this.remaining -= chunk.length;
    // The last bytes of a sized answer (all of it, for most): ended with them, in one write with
    // the head when it has not gone yet, rather than a write and an end.
    if (this.remaining === 0) {
      this.res.end(chunk);
      return;
    }
    if (this.res.write(chunk)) return;
    controller.pause();
    if (!this.waitingForDrain) {
      this.waitingForDrain = true;
      this.res.on('drain', onCallerDrain);
    }
  }

  onResponseEnd(): void {
    if (this.finished) return;
    this.finished = true;
    if (!this.res.writableEnded) this.res.end();
    this.ctx.recorder.answered(this.req, this.status, this.started);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.finished) return;
    this.finished = true;
    if (this.res.destroyed) return this.recordAbort();
    const stalled = (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT';
    if (stalled) this.ctx.recorder.stalled(this.req, 'response', this.ctx.upstreamIdleTimeoutMs);
    if (this.res.headersSent) {
      // Never a truncated body that looks complete.
      if (stalled) {
        this.res.destroy();
        this.ctx.recorder.answered(this.req, this.status, this.started);
        return;
      }
      this.ctx.log.warn(
        { status: this.status, reason: (err as { code?: string }).code ?? err.message },
        'gateway response failed midway; closing the caller connection',
      );
      this.res.destroy();
      this.ctx.recorder.answered(this.req, this.status, this.started);
      return;
    }
    const problem = upstreamError(err, this.ctx, this.sent);
    this.ctx.log.warn({ code: problem.code, reason: problem.message }, 'forwarding failed');
    answerProblem(this.ctx, this.req, this.res, problem, this.started, this.headers.hasBody);
  }

  private recordAbort(): void {
    // 499 (as nginx logs it): the caller closed the connection before the answer was complete.
    this.ctx.recorder.answered(this.req, 499, this.started);
  }
}
