import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { BadRequestError } from '../core/errors.js';
import type { Authorization } from '../token/authorization.js';
import { answerProblem, upstreamError } from './answer-problem.js';
import { callerResponseHeaders, flatHeaders, setAuthorization } from './headers.js';
import type { ParsedHeaders, RawHeaders, RequestHeaders } from './headers.js';
import type { Authorizer, Shared } from './exchange-options.js';
import { meterUpload } from '../overload/read-budget.js';
import * as resend from './resend.js';

const kExchange = Symbol('exchange');
/** A caller's response, pointing back at its exchange: the listeners below are built once. */
type Tagged = ServerResponse & { [kExchange]?: Exchange };

/** The caller went away: stop the upstream request. */
function onCallerClose(this: Tagged): void {
  this[kExchange]?.callerClosed();
}

/** The caller's connection was silent (a listener keeps Node from closing the socket itself). */
function onCallerIdle(this: Tagged): void {
  this[kExchange]?.callerIdle();
}

/** The caller caught up: read more from the gateway. */
function onCallerDrain(this: Tagged): void {
  this[kExchange]?.controller?.resume();
}

/**
 * One forwarded request, and the one object it makes: an undici dispatch handler that sends the
 * request with a token and streams the gateway's answer into the caller's response, with
 * backpressure both ways. At two fixed points it consults the policies of resend.ts: when an
 * answer's head arrives, the replay after a 401; when an attempt fails, the retry on a new
 * connection. Failures become 502/504 or, once the answer has started, a destroyed connection
 * (never a truncated body that looks complete).
 */
export class Exchange implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | undefined;
  /** How the request was last authorised (its token, and the proof maker of a DPoP-bound one). */
  private auth: Authorization | undefined;
  /** Whether the header list carries a `DPoP` proof from an earlier send. */
  private hasProof = false;
  /** True once the request has ended, one way or another: nothing more is written or recorded. */
  private finished = false;
  private status = 0;
  /** Answer body bytes still to come by the gateway's `Content-Length`; NaN when it sent none. */
  private remaining = Number.NaN;
  private waitingForDrain = false;
  /** The current attempt was handed to a connection: the gateway may have it. */
  private sent = false;
  /** Bytes of the current attempt's answer arrived. */
  private answering = false;
  /** The replay whose 401 is being read and dropped, or NO_REPLAY. */
  private replay: resend.Replay = resend.NO_REPLAY;
  /** The replays made so far. */
  private replays: resend.Replay = resend.NO_REPLAY;
  /** Sent again on a new connection after one broke under it. */
  private retried = false;

  constructor(
    private readonly ctx: Shared,
    private readonly req: IncomingMessage,
    private readonly res: Tagged,
    private readonly headers: RequestHeaders,
    private readonly source: Authorizer,
    private readonly started: number,
    private readonly expectContinue: boolean,
  ) {
    // The proxy's Authorization goes last; send() sets its value.
    headers.forward.push('authorization', '');
    res[kExchange] = this;
    res.on('close', onCallerClose);
  }

  /** Sends the request at once when a token is held, else once one is fetched. */
  start(): void {
    const auth = this.source.authorization();
    if (auth !== undefined) this.dispatch(auth);
    else this.source.authorize().then(this.dispatch.bind(this), this.fail.bind(this));
  }

  /** Sends the request, streaming the caller's body, authorised with `auth`. */
  private dispatch(auth: Authorization): void {
    if (!this.canSend()) return;
    // `100 Continue` is sent once the request is known to be forwarded.
    if (this.expectContinue) this.res.writeContinue();
    if (!this.headers.hasBody) return this.send(auth, null);
    // A request body that stays silent is cut after UPSTREAM_IDLE_TIMEOUT_MS: the caller's socket
    // timeout, which Node refreshes on every read and write (no timer of ours per chunk).
    if (!this.req.complete) this.res.setTimeout(this.ctx.upstreamIdleTimeoutMs, onCallerIdle);
    resend.copyBody(this.req, this.headers.contentLength, this.ctx.replayBodyLimitBytes);
    meterUpload(this.req, this.ctx.budget);
    this.send(auth, this.req);
  }

  /** No token could be had, or the request could not be sent: answered with `err`. */
  private fail(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    if (this.res.destroyed) return this.recordAbort();
    answerProblem(this.ctx.recorder, this.req, this.res, err, this.started, this.headers.hasBody);
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

  /** False when the request has ended or its caller has gone (then recorded as such). */
  private canSend(): boolean {
    if (this.finished) return false;
    if (this.res.destroyed) {
      this.callerClosed();
      return false;
    }
    return true;
  }

  /** One attempt: on the pool, or on a new connection after a retry. */
  private send(auth: Authorization, body: IncomingMessage | Buffer | null): void {
    this.auth = auth;
    const headers = this.headers.forward;
    this.hasProof = setAuthorization(headers, auth, this.req.method!, this.req.url!, this.hasProof);
    this.sent = false;
    try {
      (this.retried ? this.ctx.freshPool : this.ctx.pool).dispatch(
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
          reset: this.req.method === 'HEAD' ? false : undefined,
        },
        this,
      );
    } catch (err) {
      // The client refused the request itself (a header or method it will not send).
      const code = (err as { code?: string }).code ?? 'invalid';
      this.fail(new BadRequestError(`the request cannot be forwarded (${code})`, { cause: err }));
    }
  }

  /** Sends the request again, with the whole body from its copy. */
  private sendAgain(auth: Authorization): void {
    this.controller = undefined;
    if (this.canSend()) this.send(auth, resend.copiedBody(this.req, this.headers.hasBody));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    this.sent = true;
    this.answering = false;
    if (this.finished) controller.abort(new Error('caller closed the connection'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, parsed: ParsedHeaders): void {
    this.answering = true;
    // A DPoP-bound token's answers carry the gateway's nonces (Bearer: one property read).
    const nonceAsked = this.auth!.answered?.(statusCode, parsed) === true;
    if (this.finished) return;
    if (statusCode === 401 || nonceAsked) {
      // The replay policy: a replayed 401 is read and dropped, and the request sent again at its end.
      const atHand = resend.bodyAtHand(this.req, this.headers.hasBody);
      this.replay = resend.replayAfter(nonceAsked, this.replays, atHand, this.auth!, this.source, this.ctx.recorder);
      if (this.replay !== resend.NO_REPLAY) return;
    }
    if (statusCode < 200) return;
    // The answer goes to the caller: the body will not be sent again, and its copy goes at once.
    if (this.headers.hasBody) resend.dropCopy(this.req);
    this.status = statusCode;
    const length = parsed['content-length'];
    this.remaining = typeof length === 'string' && this.req.method !== 'HEAD' ? Number(length) : Number.NaN;
    // A Unix socket has no origin (listenOrigin undefined): a rewritten Location is then an absolute path.
    const origin = parsed.location === undefined ? undefined : this.ctx.listenOrigin;
    const host = this.headers.host;
    const callerOrigin = origin === undefined ? '' : host !== undefined ? `http://${host}` : origin;
    // undici keeps the parser's raw list on the controller: names as the gateway wrote them.
    const raw = (controller as Dispatcher.DispatchController & { rawHeaders?: RawHeaders }).rawHeaders ?? flatHeaders(parsed);
    this.res.writeHead(statusCode, callerResponseHeaders(raw, this.ctx.baseUrl, callerOrigin, parsed));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.ctx.budget.spend(chunk.length);
    if (this.finished || this.replay !== resend.NO_REPLAY) return;
    this.remaining -= chunk.length;
    // The last bytes of a sized answer (all of it, for most): ended with them, in one write with
    // the head when it has not gone yet, rather than a write and an end.
    if (this.remaining === 0) {
      this.res.end(chunk);
      if (this.res.writableLength !== 0) this.ctx.callers.blocked(this.req, this.res);
      return;
    }
    if (this.res.write(chunk)) return;
    controller.pause();
    this.ctx.callers.blocked(this.req, this.res);
    if (!this.waitingForDrain) {
      this.waitingForDrain = true;
      this.res.on('drain', onCallerDrain);
    }
  }

  onResponseEnd(): void {
    if (this.finished) return;
    if (this.replay !== resend.NO_REPLAY) return this.replayNow();
    this.finished = true;
    if (!this.res.writableEnded) this.res.end();
    this.ctx.recorder.answered(this.req, this.status, this.started);
  }

  /** The dropped 401 has ended: the request goes again, authorised as the replay policy says. */
  private replayNow(): void {
    this.controller = undefined;
    const auth = resend.replayAuthorization(this.replay, this.auth!, this.source.authorization());
    this.replays |= this.replay;
    this.replay = resend.NO_REPLAY;
    if (auth !== undefined) this.sendAgain(auth);
    else this.source.authorize().then(this.sendAgain.bind(this), this.fail.bind(this));
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.finished) return;
    // The retry policy, once, for an attempt whose connection broke after it was sent, before any answer.
    const atHand = !this.retried && this.sent && !this.answering && resend.bodyAtHand(this.req, this.headers.hasBody);
    if (atHand && resend.mayRetry(err, this.req.method!, this.headers.forward)) {
      this.retried = true;
      const reason = (err as { code?: string }).code;
      this.ctx.log.info({ reason }, 'the connection to the gateway broke before an answer; sending the request again on a new connection');
      this.sendAgain(this.source.authorization() ?? this.auth!);
      return;
    }
    this.finished = true;
    if (this.res.destroyed) return this.recordAbort();
    const stalled = (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT';
    if (stalled) this.ctx.recorder.stalled(this.req, 'response', this.ctx.upstreamIdleTimeoutMs);
    if (this.res.headersSent) {
      // Never a truncated body that looks complete.
      const reason = (err as { code?: string }).code ?? err.message;
      if (!stalled) this.ctx.log.warn({ status: this.status, reason }, 'gateway response failed midway; closing the caller connection');
      this.res.destroy();
      this.ctx.recorder.answered(this.req, this.status, this.started);
      return;
    }
    const problem = upstreamError(err, this.ctx, this.sent);
    this.ctx.log.warn({ code: problem.code, reason: problem.message }, 'forwarding failed');
    answerProblem(this.ctx.recorder, this.req, this.res, problem, this.started, this.headers.hasBody);
  }

  private recordAbort(): void {
    // 499 (as nginx logs it): the caller closed the connection before the answer was complete.
    this.ctx.recorder.answered(this.req, 499, this.started);
  }
}
