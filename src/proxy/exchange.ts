import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { BadRequestError } from '../core/errors.js';
import type { Authorization } from '../token/authorization.js';
import { answerProblem, upstreamError } from './answer-problem.js';
import { reserveAuthorization, setAuthorization } from './authorization-header.js';
import type { Authorizer, CallerRequest, ExchangeSettings } from './exchange-options.js';
import { meterUpload } from '../overload/read-budget.js';
import type { Phase } from './exchange-phase.js';
import * as resend from './resend.js';
import { callerResponseHeaders, flatHeaders, type ParsedHeaders, type RawHeaders } from './response-headers.js';

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
  private phase: Phase = 'waiting-token';
  /** How the request was last authorised (its token, and the proof maker of a DPoP-bound one). */
  private auth: Authorization | undefined;
  /** Whether the header list carries a `DPoP` proof from an earlier send. */
  private hasProof = false;
  /** The status of the answer that went to the caller; 0 before one did. */
  private status = 0;
  /** Answer body bytes still to come by the gateway's `Content-Length`; NaN when it sent none. */
  private remaining = Number.NaN;
  /** The `drain` listener is on the caller's response (it is added once). */
  private waitingForDrain = false;
  /** In `dropping-401`: the replay to make once the 401 has ended. */
  private replay: resend.Replay = resend.NO_REPLAY;
  /** The replays made so far. */
  private replays: resend.Replay = resend.NO_REPLAY;
  /** Sent again on a new connection after one broke under it. */
  private retried = false;

  constructor(
    private readonly settings: ExchangeSettings,
    private readonly request: CallerRequest,
    private readonly source: Authorizer,
  ) {
    reserveAuthorization(request.forward);
    settings.recorder.began(request.req);
    (request.res as Tagged)[kExchange] = this;
    request.res.on('close', onCallerClose);
  }

  /** Sends the request at once when a token is held, else once one is fetched. */
  start(): void {
    const auth = this.source.authorization();
    if (auth !== undefined) return this.dispatch(auth);
    this.settings.recorder.awaitingToken(this.request.req);
    this.source.authorize().then(this.dispatch.bind(this), this.fail.bind(this));
  }

  /** Sends the request, streaming the caller's body, authorised with `auth`. */
  private dispatch(auth: Authorization): void {
    if (!this.canSend()) return;
    const { req, res } = this.request;
    // `100 Continue` is sent once the request is known to be forwarded.
    if (this.request.expectContinue) res.writeContinue();
    if (!this.request.hasBody) return this.send(auth, null);
    // A request body that stays silent is cut after UPSTREAM_IDLE_TIMEOUT_MS: the caller's socket
    // timeout, which Node refreshes on every read and write (no timer of ours per chunk).
    if (!req.complete) res.setTimeout(this.settings.upstreamIdleTimeoutMs, onCallerIdle);
    resend.copyBody(req, this.request.contentLength, this.settings.replayBodyLimitBytes);
    meterUpload(req, this.settings.budget);
    this.send(auth, req);
  }

  /** No token could be had, or the request could not be sent: answered with `err`. */
  private fail(err: unknown): void {
    if (this.phase === 'done') return;
    this.phase = 'done';
    const { req, res, started, hasBody } = this.request;
    if (res.destroyed) return this.recordAbort();
    answerProblem(this.settings.recorder, req, res, err, started, hasBody);
  }

  callerClosed(): void {
    if (this.request.res.writableFinished) return;
    this.controller?.abort(new Error('caller closed the connection'));
    if (this.phase !== 'done') {
      this.phase = 'done';
      this.recordAbort();
    }
  }

  /** The caller's connection went silent: ends the exchange if its request body is still unread. */
  callerIdle(): void {
    const { req, res, started } = this.request;
    if (req.complete || this.phase === 'done') {
      // The body is all here; the wait that followed is the gateway's (UPSTREAM_TIMEOUT_MS).
      res.setTimeout(0);
      return;
    }
    this.phase = 'done';
    this.settings.recorder.stalled(req, 'request', this.settings.upstreamIdleTimeoutMs);
    this.controller?.abort(new Error('the request body went silent'));
    res.destroy();
    // 408 (as nginx logs a request body that timed out), unless an answer had begun.
    this.settings.recorder.answered(req, this.status === 0 ? 408 : this.status, started);
  }

  /** False when the request has ended or its caller has gone (then recorded as such). */
  private canSend(): boolean {
    if (this.phase === 'done') return false;
    if (this.request.res.destroyed) {
      this.callerClosed();
      return false;
    }
    return true;
  }

  /** One attempt: on the pool, or on a new connection after a retry. */
  private send(auth: Authorization, body: IncomingMessage | Buffer | null): void {
    const { req, forward: headers } = this.request;
    const settings = this.settings;
    this.auth = auth;
    this.hasProof = setAuthorization(headers, auth, req.method!, req.url!, this.hasProof);
    settings.recorder.attempt(req, headers, this.retried ? 'retry' : this.replays !== resend.NO_REPLAY ? 'replay' : 'first');
    this.phase = 'sending';
    try {
      (this.retried ? settings.freshPool : settings.pool).dispatch(
        {
          path: settings.basePath + req.url!,
          method: req.method! as Dispatcher.HttpMethod,
          headers,
          body,
          headersTimeout: settings.upstreamTimeoutMs,
          // The longest gap between two chunks of the answer body (undici's default is 300 s).
          bodyTimeout: settings.upstreamIdleTimeoutMs,
          // undici closes the connection after every HEAD (against servers that send a body with a
          // HEAD answer): a new connection, over TLS a handshake, per HEAD. Its parser still refuses
          // stray bytes on an idle connection ("bad response") and closes it, and the gateway
          // answers HEAD as HTTP says, so HEAD is pooled like the rest.
          reset: req.method === 'HEAD' ? false : undefined,
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
    if (this.canSend()) this.send(auth, resend.copiedBody(this.request.req, this.request.hasBody));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.phase === 'done') controller.abort(new Error('caller closed the connection'));
    else this.phase = 'awaiting-head';
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, parsed: ParsedHeaders): void {
    if (statusCode >= 200) this.settings.recorder.attemptEnded(this.request.req, statusCode);
    // A DPoP-bound token's answers carry the gateway's nonces (Bearer: one property read).
    const nonceAsked = this.auth!.answered?.(statusCode, parsed) === true;
    if (this.phase === 'done') return;
    const { req, res, hasBody } = this.request;
    if (statusCode === 401 || nonceAsked) {
      // The replay policy: a replayed 401 is read and dropped, and the request sent again at its end.
      const atHand = resend.bodyAtHand(req, hasBody);
      this.replay = resend.replayAfter(nonceAsked, this.replays, atHand, this.auth!, this.source, this.settings.recorder);
      if (this.replay !== resend.NO_REPLAY) {
        this.phase = 'dropping-401';
        return;
      }
    }
    if (statusCode < 200) {
      this.phase = 'interim-answer';
      return;
    }
    this.phase = 'streaming-answer';
    // The answer goes to the caller: the body will not be sent again, and its copy goes at once.
    if (hasBody) resend.dropCopy(req);
    this.status = statusCode;
    const length = parsed['content-length'];
    this.remaining = typeof length === 'string' && req.method !== 'HEAD' ? Number(length) : Number.NaN;
    // A Unix socket has no origin (listenOrigin undefined): a rewritten Location is then an absolute path.
    const origin = parsed.location === undefined ? undefined : this.settings.listenOrigin;
    const host = this.request.host;
    const callerOrigin = origin === undefined ? '' : host !== undefined ? `http://${host}` : origin;
    // undici keeps the parser's raw list on the controller: names as the gateway wrote them.
    const raw = (controller as Dispatcher.DispatchController & { rawHeaders?: RawHeaders }).rawHeaders ?? flatHeaders(parsed);
    res.writeHead(statusCode, callerResponseHeaders(raw, this.settings.baseUrl, callerOrigin, parsed, this.settings.seenNames));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.settings.budget.spend(chunk.length);
    if (this.phase !== 'streaming-answer') return;
    const res = this.request.res;
    this.remaining -= chunk.length;
    // The last bytes of a sized answer (all of it, for most): ended with them, in one write with
    // the head when it has not gone yet, rather than a write and an end.
    if (this.remaining === 0) {
      res.end(chunk);
      if (res.writableLength !== 0) this.settings.callers.blocked(this.request.req, res);
      return;
    }
    if (res.write(chunk)) return;
    controller.pause();
    this.settings.callers.blocked(this.request.req, res);
    if (!this.waitingForDrain) {
      this.waitingForDrain = true;
      res.on('drain', onCallerDrain);
    }
  }

  onResponseEnd(): void {
    if (this.phase === 'done') return;
    if (this.phase === 'dropping-401') return this.replayNow();
    this.phase = 'done';
    const { req, res, started } = this.request;
    if (!res.writableEnded) res.end();
    this.settings.recorder.answered(req, this.status, started);
  }

  /** The dropped 401 has ended: the request goes again, authorised as the replay policy says. */
  private replayNow(): void {
    this.controller = undefined;
    const auth = resend.replayAuthorization(this.replay, this.auth!, this.source.authorization());
    this.replays |= this.replay;
    this.replay = resend.NO_REPLAY;
    if (auth !== undefined) return this.sendAgain(auth);
    this.phase = 'waiting-token';
    this.source.authorize().then(this.sendAgain.bind(this), this.fail.bind(this));
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.settings.recorder.attemptEnded(this.request.req, 0, (err as { code?: string }).code ?? err.name);
    const phase = this.phase;
    if (phase === 'done') return;
    const { req, res, started, hasBody } = this.request;
    const { recorder, log } = this.settings;
    // The retry policy, once, for an attempt whose connection broke after it was sent, before any answer.
    const atHand = !this.retried && phase === 'awaiting-head' && resend.bodyAtHand(req, hasBody);
    if (atHand && resend.mayRetry(err, req.method!, this.request.forward)) {
      this.retried = true;
      const reason = (err as { code?: string }).code;
      log.info({ reason }, 'the connection to the gateway broke before an answer; sending the request again on a new connection');
      this.sendAgain(this.source.authorization() ?? this.auth!);
      return;
    }
    this.phase = 'done';
    if (res.destroyed) return this.recordAbort();
    const stalled = (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT';
    if (stalled) recorder.stalled(req, 'response', this.settings.upstreamIdleTimeoutMs);
    if (res.headersSent) {
      // Never a truncated body that looks complete.
      const reason = (err as { code?: string }).code ?? err.message;
      if (!stalled) log.warn({ status: this.status, reason }, 'gateway response failed midway; closing the caller connection');
      res.destroy();
      recorder.answered(req, this.status, started);
      return;
    }
    const problem = upstreamError(err, this.settings, phase !== 'sending');
    log.warn({ code: problem.code, reason: problem.message }, 'forwarding failed');
    answerProblem(recorder, req, res, problem, started, hasBody);
  }

  private recordAbort(): void {
    // 499 (as nginx logs it): the caller closed the connection before the answer was complete.
    this.settings.recorder.answered(this.request.req, 499, this.request.started);
  }
}
