import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import {
  BadRequestError,
  MethodNotAllowedError,
  ProxyError,
  UpgradeNotSupportedError,
  UpstreamTimeoutError,
  UpstreamUnreachableError,
} from '../core/errors.js';
import { networkFailureReason } from '../net/failure-reason.js';
import type { Log } from '../core/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import { sendProblem } from '../core/problem.js';
import type { TokenSource } from '../token/token-source.js';
import { callerResponseHeaders, flatHeaders, type RawHeaders, readRequestHeaders, type RequestHeaders } from './headers.js';
import { checkTarget } from './path-guard.js';

/** Picks the token source for a request (the configured credential, or §6 pass-through ones). */
export type SelectSource = (req: IncomingMessage) => TokenSource | ProxyError;

export interface ForwarderOptions {
  /** Connection pool to the gateway's origin. */
  pool: Dispatcher;
  /** `BASE_URL` without its trailing slash, path prefix included. */
  baseUrl: string;
  selectSource: SelectSource;
  upstreamTimeoutMs: number;
  replayBodyLimitBytes: number;
  metrics: Metrics;
  log: Log;
  accessLog: boolean;
  /** Origin for a rewritten `Location` when the caller sent no `Host`. */
  listenOrigin: string;
}

/** Shared, built once: everything a request needs besides itself. */
interface Context extends ForwarderOptions {
  basePath: string;
  lastToken: string;
  lastAuthorization: string;
}

const kHandler = Symbol('forwardHandler');
type TrackedResponse = ServerResponse & { [kHandler]?: ForwardHandler };

/**
 * Creates the proxy listener's request handler (PRODUCT §4). `expectContinue` is true for the
 * `checkContinue` event: `100 Continue` is sent once the request is known to be forwarded.
 */
export function createForwarder(options: ForwarderOptions): (req: IncomingMessage, res: ServerResponse, expectContinue?: boolean) => void {
  const ctx: Context = {
    ...options,
    basePath: new URL(options.baseUrl).pathname.replace(/\/$/, ''),
    lastToken: '',
    lastAuthorization: '',
  };
  return function forward(req, res, expectContinue = false) {
    const started = performance.now();
    const method = req.method!;
    const headers = readRequestHeaders(req.rawHeaders);
    let error: ProxyError | undefined;
    if (method === 'CONNECT' || method === 'TRACE') error = new MethodNotAllowedError(`${method} is not forwarded`);
    else if (headers.upgrade !== undefined) {
      error = new UpgradeNotSupportedError(`protocol upgrades (${headers.upgrade}) are not forwarded`);
      res.shouldKeepAlive = false;
    } else error = checkTarget(req.url!);
    let source: TokenSource | undefined;
    if (error === undefined) {
      const selected = ctx.selectSource(req);
      if (selected instanceof ProxyError) error = selected;
      else source = selected;
    }
    if (error !== undefined || source === undefined) {
      answerProblem(ctx, req, res, error, started);
      return;
    }
    const handler = new ForwardHandler(ctx, req, res, headers, source, started, expectContinue);
    const token = source.current();
    if (token !== undefined) handler.dispatch(token);
    else source.get().then(handler.dispatch.bind(handler), handler.fail.bind(handler));
  };
}

/** `Bearer <token>`, built once per token rather than once per request. */
function authorizationFor(ctx: Context, token: string): string {
  if (ctx.lastToken !== token) {
    ctx.lastToken = token;
    ctx.lastAuthorization = `Bearer ${token}`;
  }
  return ctx.lastAuthorization;
}

/** Answers with a problem and records the request. */
function answerProblem(ctx: Context, req: IncomingMessage, res: ServerResponse, err: unknown, started: number): void {
  // An unread request body would be taken as the next request on a kept-alive connection.
  if (!req.complete) res.shouldKeepAlive = false;
  const status = sendProblem(res, err);
  record(ctx, req, status, started);
}

function record(ctx: Context, req: IncomingMessage, status: number, started: number): void {
  const seconds = (performance.now() - started) / 1000;
  ctx.metrics.observeRequest(req.method!, status, seconds);
  if (ctx.accessLog) {
    const url = req.url!;
    const q = url.indexOf('?');
    ctx.log.info(
      { method: req.method, path: q === -1 ? url : url.slice(0, q), status, durationMs: Math.round(seconds * 1e4) / 10 },
      'request',
    );
  }
}

function upstreamError(err: Error, timeoutMs: number): ProxyError {
  const code = (err as { code?: string }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new UpstreamTimeoutError(`the gateway sent no response headers within ${timeoutMs} ms`, { cause: err });
  }
  return new UpstreamUnreachableError(`the gateway could not be reached (${networkFailureReason(err)})`, { cause: err });
}

/** The caller went away: stop the upstream request. `this` is the response. */
function onCallerClose(this: TrackedResponse): void {
  this[kHandler]?.callerClosed();
}

/** The caller caught up: read more from the gateway. `this` is the response. */
function onCallerDrain(this: TrackedResponse): void {
  this[kHandler]?.controller?.resume();
}

/**
 * One forwarded request: an undici dispatch handler that streams the gateway's answer into the
 * caller's response, keeps a copy of a small body for a replay after a 401 (§5.7), and maps
 * failures to 502/504 or, once the answer has started, to a destroyed connection (§4.8).
 */
class ForwardHandler implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | undefined;
  private token = '';
  private replayed = false;
  private discarding = false;
  private status = 0;
  private finished = false;
  private readonly hasBody: boolean;
  private readonly head: boolean;
  private copy: Buffer[] | undefined;
  private copyBytes = 0;
  private waitingForDrain = false;

  constructor(
    private readonly ctx: Context,
    private readonly req: IncomingMessage,
    private readonly res: TrackedResponse,
    private readonly headers: RequestHeaders,
    private readonly source: TokenSource,
    private readonly started: number,
    private readonly expectContinue: boolean,
  ) {
    this.head = req.method === 'HEAD';
    const length = this.headers.contentLength;
    this.hasBody = (length !== undefined && length !== '0') || this.headers.transferEncoding;
    if (this.hasBody && ctx.replayBodyLimitBytes > 0 && (length === undefined || Number(length) <= ctx.replayBodyLimitBytes)) {
      this.copy = [];
    }
    // The proxy's Authorization goes last; dispatch() sets its value.
    this.headers.forward.push('authorization', '');
    res[kHandler] = this;
    res.on('close', onCallerClose);
  }

  dispatch(token: string): void {
    if (this.finished) return;
    if (this.res.destroyed) {
      this.callerClosed();
      return;
    }
    this.token = token;
    let body: IncomingMessage | Buffer | null = null;
    if (this.replayed) body = this.copy === undefined ? null : Buffer.concat(this.copy, this.copyBytes);
    else if (this.hasBody) body = this.req;
    if (this.expectContinue && !this.replayed) this.res.writeContinue();
    const headers = this.headers.forward;
    headers[headers.length - 1] = authorizationFor(this.ctx, token);
    try {
      this.ctx.pool.dispatch(
        {
          path: this.ctx.basePath + this.req.url!,
          method: this.req.method! as Dispatcher.HttpMethod,
          headers,
          body,
          headersTimeout: this.ctx.upstreamTimeoutMs,
          // undici closes the connection after every HEAD (its issue 258: servers that send a body
          // with a HEAD answer), which costs a new connection, over TLS a full handshake, per HEAD.
          // Its parser still refuses stray bytes on an idle connection ("bad response") and closes
          // it, and the gateway answers HEAD as HTTP says, so HEAD is pooled like the rest (§4.9).
          reset: this.head ? false : undefined,
        },
        this,
      );
    } catch (err) {
      // The client refused the request itself (a header or method it will not send).
      this.finished = true;
      answerProblem(this.ctx, this.req, this.res, new BadRequestError(`the request cannot be forwarded (${(err as { code?: string }).code ?? 'invalid'})`, { cause: err }), this.started);
    }
  }

  /** No token could be had (or another failure before dispatch). */
  fail(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    if (this.res.destroyed) return this.recordAbort();
    answerProblem(this.ctx, this.req, this.res, err, this.started);
  }

  callerClosed(): void {
    if (this.res.writableFinished) return;
    this.controller?.abort(new Error('caller closed the connection'));
    if (!this.finished) {
      this.finished = true;
      this.recordAbort();
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.finished) controller.abort(new Error('caller closed the connection'));
  }

  onBodySent(chunk: Buffer): void {
    if (this.copy === undefined || this.replayed) return;
    this.copyBytes += chunk.length;
    if (this.copyBytes > this.ctx.replayBodyLimitBytes) this.copy = undefined;
    else this.copy.push(chunk);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, parsed: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200 || this.finished) return;
    if (statusCode === 401) {
      // The token is dropped and another fetched in every case; only the replay needs the body (§5.7).
      const renewed = this.source.invalidate(this.token);
      const replay = !this.replayed && this.canReplay() && renewed;
      this.ctx.metrics.upstreamUnauthorized(replay);
      if (replay) {
        this.discarding = true;
        return;
      }
    }
    this.status = statusCode;
    const host = this.headers.host;
    const callerOrigin = parsed.location === undefined ? '' : host !== undefined ? `http://${host}` : this.ctx.listenOrigin;
    // undici keeps the parser's raw list on the controller: names as the gateway wrote them (§4.6).
    const raw = (controller as Dispatcher.DispatchController & { rawHeaders?: RawHeaders }).rawHeaders ?? flatHeaders(parsed);
    this.res.writeHead(statusCode, callerResponseHeaders(raw, this.ctx.baseUrl, callerOrigin));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.discarding || this.finished) return;
    if (this.res.write(chunk)) return;
    controller.pause();
    if (!this.waitingForDrain) {
      this.waitingForDrain = true;
      this.res.on('drain', onCallerDrain);
    }
  }

  onResponseEnd(): void {
    if (this.finished) return;
    if (this.discarding) {
      this.discarding = false;
      this.replayed = true;
      this.controller = undefined;
      const token = this.source.current();
      if (token !== undefined && token !== this.token) this.dispatch(token);
      else this.source.get().then(this.dispatch.bind(this), this.fail.bind(this));
      return;
    }
    this.finished = true;
    this.res.end();
    record(this.ctx, this.req, this.status, this.started);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.finished) return;
    this.finished = true;
    if (this.res.destroyed) return this.recordAbort();
    if (this.res.headersSent) {
      // Never a truncated body that looks complete (§4.8).
      this.ctx.log.warn({ status: this.status, reason: (err as { code?: string }).code ?? err.message }, 'gateway response failed midway; closing the caller connection');
      this.res.destroy();
      record(this.ctx, this.req, this.status, this.started);
      return;
    }
    const problem = upstreamError(err, this.ctx.upstreamTimeoutMs);
    this.ctx.log.warn({ code: problem.code, reason: problem.message }, 'forwarding failed');
    answerProblem(this.ctx, this.req, this.res, problem, this.started);
  }

  /** A replay needs the whole body: none, or all of it copied while it streamed. */
  private canReplay(): boolean {
    if (!this.hasBody) return true;
    return this.copy !== undefined && this.req.complete;
  }

  private recordAbort(): void {
    // 499 (as nginx logs it): the caller closed the connection before the answer was complete.
    record(this.ctx, this.req, 499, this.started);
  }
}
