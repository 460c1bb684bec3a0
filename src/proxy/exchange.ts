import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { BadRequestError } from '../core/errors.js';
import type { Log } from '../core/log.js';
import { NO_BUDGET, type ReadBudget } from '../overload/read-budget.js';
import type { Authorization } from '../token/held-token.js';
import type { DpopGateway } from '../token/dpop/index.js';
import { answerProblem, upstreamError } from './answer-problem.js';
import { setProof, type ProofTarget } from './proof-header.js';
import type { Authorizer } from './authorizer.js';
import type { CallerRequest } from './caller-request.js';
import type { Phase } from './exchange-phase.js';
import type { Recorder, RequestTrace } from './recorder.js';
import * as resend from './resend.js';
import { callerResponseHeaders, flatHeaders, NOWHERE, type CallerPlace, type ParsedHeaders } from './response-headers.js';
import type { Route } from './route.js';
import type { StalledCallers, WatchedCaller } from './stalled-callers.js';

/** What every exchange of one listener shares, given once to its forwarder (forward.ts). */
export interface ForwardSettings {
  /** Where the body bytes read into the process are reported (overload/read-budget.ts). */
  readonly budget: ReadBudget;
  /** Where the listener records what no route took (each route records its own requests). */
  readonly recorder: Recorder;
  /** Where a caller that takes none of its answer is reported: the send timeout, the overload action. */
  readonly callers: StalledCallers;
  readonly log: Log;
  /** Origin for a rewritten `Location` when the caller sent no `Host`; undefined on a Unix socket, which has none. */
  readonly listenOrigin: string | undefined;
}

const kExchange = Symbol('exchange');
/**
 * A caller's response, pointing back at its exchange: the one link from Node's objects to the
 * request's state, so that the listeners below are built once, not per request.
 */
type Linked = ServerResponse & { [kExchange]?: Exchange };

/** The caller went away: stop the upstream request. */
function onCallerClose(this: Linked): void {
  this[kExchange]?.callerClosed();
}

/** The caller's connection was silent for the idle timeout. */
function onCallerTimeout(this: Linked): void {
  this[kExchange]?.callerTimedOut();
}

/** The caller caught up: read more from the gateway. */
function onCallerDrain(this: Linked): void {
  this[kExchange]?.callerDrained();
}

/**
 * One forwarded request, and all the proxy knows of it: the route it goes on, the token source
 * that authorises it, its phase, the copy of its body kept for sending again, the watch on a
 * caller that stops reading, and its trace. It is the undici dispatch handler that sends the
 * request with a token and streams the gateway's answer into the caller's response, with
 * backpressure both ways. At two fixed points it consults the policies of resend.ts: when an
 * answer's head arrives, the replay after a 401; when an attempt fails, the retry on a new
 * connection. Failures become 502/504 or, once the answer has started, a destroyed connection
 * (never a truncated body that looks complete).
 */
export class Exchange implements Dispatcher.DispatchHandler, WatchedCaller, ProofTarget {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  /** The request target as the gateway gets it after its path prefix. */
  readonly target: string;
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
  /**
   * The `drain` listener is on the caller's response, added once the caller first blocked: from
   * then on the stalled-caller watch knows of this exchange. The `timeout` listener likewise.
   */
  private listeningForDrain = false;
  private listeningForTimeout = false;
  /** In `dropping-401`: the replay to make once the 401 has ended. */
  private replay: resend.Replay = resend.NO_REPLAY;
  /** The replays made so far. */
  private replays: resend.Replay = resend.NO_REPLAY;
  /** Sent again on a new connection after one broke under it. */
  private retried = false;
  /** The body's copy for sending again, while it may still be needed. */
  private copy: resend.BodyCopy | undefined;
  /** The request's trace, when tracing is on. */
  private readonly trace: RequestTrace | undefined;
  // The watch on a caller that stops reading (stalled-callers.ts).
  stalledSince = 0;
  unsentSeen = 0;
  queuedSeen = 0;

  constructor(
    private readonly settings: ForwardSettings,
    private readonly route: Route,
    private readonly request: CallerRequest,
    private readonly authorizer: Authorizer,
  ) {
    const { req, res } = request;
    this.req = req;
    this.res = res;
    this.method = req.method!;
    this.target = request.target;
    this.trace = route.recorder.tracer?.began(req, request.target);
    (res as Linked)[kExchange] = this;
    res.on('close', onCallerClose);
  }

  /** The gateway as DPoP proofs name it (proof-header.ts). */
  get gateway(): DpopGateway {
    return this.route.dpop;
  }

  /** Where this exchange is recorded: its route's recorder (stalled-callers.ts). */
  get recorder(): Recorder {
    return this.route.recorder;
  }

  /** Its route's idle timeout, the longest its caller may take nothing (stalled-callers.ts). */
  get sendTimeoutMs(): number {
    return this.route.upstreamIdleTimeoutMs;
  }

  /** Sends the request at once when a token is held, else once one is fetched. */
  start(): void {
    const auth = this.authorizer.authorization();
    if (auth !== undefined) return this.dispatch(auth);
    this.trace?.awaitingToken();
    this.authorizer.authorize().then(this.dispatch.bind(this), this.fail.bind(this));
  }

  /** Sends the request, streaming the caller's body, authorised with `auth`. */
  private dispatch(auth: Authorization): void {
    if (!this.canSend()) return;
    const { req, res } = this;
    // `100 Continue` is sent once the request is known to be forwarded.
    if (this.request.expectContinue) res.writeContinue();
    if (!this.request.hasBody) return this.send(auth, null);
    // A request body that stays silent is cut after UPSTREAM_IDLE_TIMEOUT_MS: the caller's socket
    // timeout, which Node refreshes on every read and write (no timer of ours per chunk).
    if (!req.complete) this.armTimeout();
    this.copy = resend.copyFor(this.request.contentLength, this.route.replayBodyLimitBytes);
    if (this.copy !== undefined || this.settings.budget !== NO_BUDGET) {
      // Before the body is handed to undici, which resumes it: every chunk reaches both.
      req.on('data', this.uploaded.bind(this)).pause();
    }
    this.send(auth, req);
  }

  /** A chunk of the caller's body, read as undici sends it on: copied, and spent from the read budget. */
  private uploaded(chunk: Buffer): void {
    this.copy?.add(chunk);
    this.settings.budget.spend(chunk.length);
  }

  /** No token could be had, or the request could not be sent: answered with `err`. */
  private fail(err: unknown): void {
    if (this.phase === 'done') return;
    this.phase = 'done';
    if (this.res.destroyed) return this.recordAbort();
    this.end(answerProblem(this.request, err));
  }

  callerClosed(): void {
    if (this.listeningForDrain) this.settings.callers.ended(this);
    if (this.res.writableFinished) return;
    this.controller?.abort(new Error('caller closed the connection'));
    if (this.phase !== 'done') {
      this.phase = 'done';
      this.recordAbort();
    }
  }

  /**
   * The caller's connection went silent for the idle timeout: ends the exchange if its request
   * body is still unread, or if answer bytes wait for a caller that takes none of them (the send
   * timeout); otherwise the silence is the gateway's (`UPSTREAM_TIMEOUT_MS`), and the timeout is
   * disarmed until the caller next blocks.
   */
  callerTimedOut(): void {
    const { req, res } = this;
    if (this.phase !== 'done' && !req.complete) {
      this.phase = 'done';
      this.route.recorder.stalled(req, 'request', this.route.upstreamIdleTimeoutMs);
      this.controller?.abort(new Error('the request body went silent'));
      res.destroy();
      // 408 (as nginx logs a request body that timed out), unless an answer had begun.
      this.end(this.status === 0 ? 408 : this.status);
      return;
    }
    if (!this.settings.callers.timedOut(this)) res.setTimeout(0);
  }

  callerDrained(): void {
    this.stalledSince = 0;
    if (this.phase === 'streaming-answer') this.controller?.resume();
  }

  /** The caller's socket timeout, set to the idle timeout, with this exchange's listener on it. */
  private armTimeout(): void {
    this.res.setTimeout(this.route.upstreamIdleTimeoutMs);
    if (this.listeningForTimeout) return;
    this.listeningForTimeout = true;
    this.res.on('timeout', onCallerTimeout);
  }

  /** The caller took none of what was just written: watched from now on, and read from again once it drains. */
  private blocked(): void {
    this.settings.callers.blocked(this);
    this.armTimeout();
    if (this.listeningForDrain) return;
    this.listeningForDrain = true;
    this.res.on('drain', onCallerDrain);
  }

  /** False when the request has ended or its caller has gone (then recorded as such). */
  private canSend(): boolean {
    if (this.phase === 'done') return false;
    if (this.res.destroyed) {
      this.callerClosed();
      return false;
    }
    return true;
  }

  /** One attempt: on the pool, or on a new connection after a retry. */
  private send(auth: Authorization, body: IncomingMessage | Buffer | null): void {
    const headers = this.request.forward;
    const route = this.route;
    this.auth = auth;
    // The proxy's Authorization is the list's last pair (caller-request.ts); a DPoP-bound token's
    // proof goes before it (proof-header.ts). A Bearer token costs one assignment.
    headers[headers.length - 1] = auth.header;
    if (auth.proof !== undefined || this.hasProof) this.hasProof = setProof(headers, auth, this, this.hasProof);
    this.trace?.attempt(headers, this.retried ? 'retry' : this.replays !== resend.NO_REPLAY ? 'replay' : 'first');
    this.phase = 'sending';
    try {
      const connections = route.connections;
      (this.retried ? connections.fresh : connections.pool).dispatch(
        {
          origin: connections.origin,
          path: route.basePath + this.target,
          method: this.method as Dispatcher.HttpMethod,
          headers,
          body,
          headersTimeout: route.upstreamTimeoutMs,
          // The longest gap between two chunks of the answer body (undici's default is 300 s).
          bodyTimeout: route.upstreamIdleTimeoutMs,
          // undici closes the connection after every HEAD (against servers that send a body with a
          // HEAD answer): a new connection, over TLS a handshake, per HEAD. Its parser still refuses
          // stray bytes on an idle connection ("bad response") and closes it, and the gateway
          // answers HEAD as HTTP says, so HEAD is pooled like the rest.
          reset: this.method === 'HEAD' ? false : undefined,
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
    if (this.canSend()) this.send(auth, this.request.hasBody ? this.copy!.body() : null);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.phase === 'done') controller.abort(new Error('caller closed the connection'));
    else this.phase = 'awaiting-head';
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, parsed: ParsedHeaders): void {
    if (statusCode >= 200) this.trace?.attemptEnded(statusCode);
    // A DPoP-bound token's answers carry the gateway's nonces (Bearer: one property read).
    const nonceAsked = this.auth!.answered?.(this.route.dpop, statusCode, parsed) === true;
    if (this.phase === 'done') return;
    const { req, res } = this;
    const hasBody = this.request.hasBody;
    if (statusCode === 401 || nonceAsked) {
      // The replay policy: a replayed 401 is read and dropped, and the request sent again at its end.
      const bodyAtHand = resend.bodyAtHand(req, hasBody, this.copy);
      const refusal = { nonceAsked, done: this.replays, bodyAtHand, refused: this.auth! };
      this.replay = resend.replayAfter(refusal, this.authorizer, this.route.recorder);
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
    this.copy?.drop();
    this.status = statusCode;
    const length = parsed['content-length'];
    this.remaining = typeof length === 'string' && this.method !== 'HEAD' ? Number(length) : Number.NaN;
    // A Unix socket has no origin (listenOrigin undefined): a rewritten Location is then an absolute path.
    const caller = parsed.location === undefined ? NOWHERE : this.callerPlace();
    // undici keeps the parser's raw list on the controller (its typed `rawHeaders`): names as the gateway wrote them.
    const raw = Array.isArray(controller.rawHeaders) ? controller.rawHeaders : flatHeaders(parsed);
    res.writeHead(statusCode, callerResponseHeaders(raw, this.route, caller, parsed));
  }

  /** Where the caller is, for a rewritten `Location`: the origin it used (its `Host`, else the listener's), its mount. */
  private callerPlace(): CallerPlace {
    const listenOrigin = this.settings.listenOrigin;
    const host = this.request.host;
    const origin = listenOrigin === undefined ? '' : host !== undefined ? `http://${host}` : listenOrigin;
    return { origin, mount: this.request.mount };
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.settings.budget.spend(chunk.length);
    if (this.phase !== 'streaming-answer') return;
    const res = this.res;
    this.remaining -= chunk.length;
    // The last bytes of a sized answer (all of it, for most): ended with them, in one write with
    // the head when it has not gone yet, rather than a write and an end.
    if (this.remaining === 0) {
      res.end(chunk);
      if (res.writableLength !== 0) this.blocked();
      return;
    }
    if (res.write(chunk)) return;
    controller.pause();
    this.blocked();
  }

  onResponseEnd(): void {
    if (this.phase === 'done') return;
    if (this.phase === 'dropping-401') return this.replayNow();
    this.phase = 'done';
    if (!this.res.writableEnded) this.res.end();
    this.end(this.status);
  }

  /** The dropped 401 has ended: the request goes again, authorised as the replay policy says. */
  private replayNow(): void {
    this.controller = undefined;
    const auth = resend.replayAuthorization(this.replay, this.auth!, this.authorizer.authorization());
    this.replays |= this.replay;
    this.replay = resend.NO_REPLAY;
    if (auth !== undefined) return this.sendAgain(auth);
    this.phase = 'waiting-token';
    this.authorizer.authorize().then(this.sendAgain.bind(this), this.fail.bind(this));
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.trace?.attemptEnded(0, (err as { code?: string }).code ?? err.name);
    const phase = this.phase;
    if (phase === 'done') return;
    const { req, res } = this;
    const { log } = this.settings;
    const recorder = this.route.recorder;
    // The retry policy, once, for an attempt whose connection broke after it was sent, before any answer.
    const atHand = !this.retried && phase === 'awaiting-head' && resend.bodyAtHand(req, this.request.hasBody, this.copy);
    if (atHand && resend.mayRetry(err, this.method, this.request.forward)) {
      this.retried = true;
      const reason = (err as { code?: string }).code;
      log.info({ reason }, 'the connection to the gateway broke before an answer; sending the request again on a new connection');
      this.sendAgain(this.authorizer.authorization() ?? this.auth!);
      return;
    }
    this.phase = 'done';
    if (res.destroyed) return this.recordAbort();
    const stalled = (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT';
    if (stalled) recorder.stalled(req, 'response', this.route.upstreamIdleTimeoutMs);
    if (res.headersSent) {
      // Never a truncated body that looks complete.
      const reason = (err as { code?: string }).code ?? err.message;
      if (!stalled) log.warn({ status: this.status, reason }, 'gateway response failed midway; closing the caller connection');
      res.destroy();
      this.end(this.status);
      return;
    }
    const problem = upstreamError(err, this.route, phase !== 'sending');
    log.warn({ code: problem.code, reason: problem.message }, 'forwarding failed');
    this.end(answerProblem(this.request, problem));
  }

  private recordAbort(): void {
    // 499 (as nginx logs it): the caller closed the connection before the answer was complete.
    this.end(499);
  }

  /** The request ended with `status`: its trace ends, and it is recorded on its route. */
  private end(status: number): void {
    this.trace?.ended(status);
    this.route.recorder.answered(this.req, status, this.request.started);
  }
}
