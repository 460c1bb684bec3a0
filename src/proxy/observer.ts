import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Log } from '../core/log.js';

/** Which body went silent: the caller's request body, the gateway's answer, or the caller's reading of it. */
export type StallDirection = 'request' | 'response' | 'send';

/**
 * What the proxy reports of its requests. The proxy owns this interface; the wiring hands it an
 * implementation (the metrics), so the request path knows nothing of how it is counted.
 */
export interface ProxyObserver {
  /** A request ended: answered, refused, or given up by its caller (499). */
  requestEnded(method: string, status: number, seconds: number): void;
  /** The gateway answered 401; `replayed` when the request was sent again with a new token. */
  upstreamUnauthorized(replayed: boolean): void;
  /** A body stayed silent longer than `UPSTREAM_IDLE_TIMEOUT_MS` and the exchange was ended. */
  upstreamStalled(direction: StallDirection): void;
  /** A new request was answered `503 overloaded`: memory was near its limit. */
  requestShed(): void;
  /** While shedding, an exchange whose caller had taken nothing of its answer for a while was ended. */
  exchangeReset(): void;
}

/** Which send of a request an attempt is: the first, a retry on a new connection, a replay after a 401. */
export type AttemptKind = 'first' | 'retry' | 'replay';

/**
 * The traces of the request path (docs/operations.md, "Traces"): the proxy owns this interface,
 * the wiring hands it an implementation when tracing is on. Every call names the caller's request.
 */
export interface RequestTracer {
  /** A request is forwarded: its server span starts, continuing the caller's `traceparent`. */
  began(req: IncomingMessage): void;
  /** The request waits for a token: its span is linked to the fetch that ends the wait. */
  awaitingToken(req: IncomingMessage): void;
  /** An attempt is sent with `headers` (a flat list): its span starts and its `traceparent` is set in them. */
  attempt(req: IncomingMessage, headers: string[], kind: AttemptKind): void;
  /** The attempt's answer began with `status`, or it failed (`status` 0, `error` its code). */
  attemptEnded(req: IncomingMessage, status: number, error?: string): void;
  /** The request ended with `status`: its server span ends. */
  ended(req: IncomingMessage, status: number): void;
}

const STALL_MESSAGES: Record<StallDirection, string> = {
  request: 'the request body went silent; closing the caller connection',
  response: 'the gateway answer went silent; closing the caller connection',
  send: 'the caller took none of its answer; closing the caller connection',
};

/**
 * The one place the request path reports from: every ended request goes through here to the
 * observer and, when `ACCESS_LOG` is on, to the access log.
 */
export class Recorder {
  constructor(
    private readonly observer: ProxyObserver,
    private readonly log: Log,
    private readonly accessLog: boolean,
    private readonly tracer?: RequestTracer,
  ) {}

  /** A request became an exchange (traced when tracing is on). */
  began(req: IncomingMessage): void {
    if (this.tracer !== undefined) this.tracer.began(req);
  }

  /** The exchange waits for a token. */
  awaitingToken(req: IncomingMessage): void {
    if (this.tracer !== undefined) this.tracer.awaitingToken(req);
  }

  /** An attempt is sent to the gateway with `headers`. */
  attempt(req: IncomingMessage, headers: string[], kind: AttemptKind): void {
    if (this.tracer !== undefined) this.tracer.attempt(req, headers, kind);
  }

  /** An attempt's answer began (`status`) or it failed (`status` 0). */
  attemptEnded(req: IncomingMessage, status: number, error?: string): void {
    if (this.tracer !== undefined) this.tracer.attemptEnded(req, status, error);
  }

  /** A request the forwarder ended (answered, refused, or abandoned), `started` from `performance.now()`. */
  answered(req: IncomingMessage, status: number, started: number): void {
    const seconds = (performance.now() - started) / 1000;
    this.observer.requestEnded(req.method!, status, seconds);
    if (this.tracer !== undefined) this.tracer.ended(req, status);
    if (this.accessLog) {
      const url = req.url!;
      const q = url.indexOf('?');
      this.log.info(
        { method: req.method, path: q === -1 ? url : url.slice(0, q), status, durationMs: Math.round(seconds * 1e4) / 10 },
        'request',
      );
    }
  }

  /**
   * A request the listener refused before it became a request the forwarder sees (`CONNECT`, a
   * head the parser refused): counted with no duration, and not in the access log.
   */
  refused(method: string, status: number): void {
    this.observer.requestEnded(method, status, 0);
  }

  upstreamUnauthorized(replayed: boolean): void {
    this.observer.upstreamUnauthorized(replayed);
  }

  /** A new request shed near the memory limit (it is recorded as answered too). */
  shed(): void {
    this.observer.requestShed();
  }

  /** An exchange ended by the overload action (stalled-callers.ts): counted; the guard logs the action. */
  overloadReset(_req: IncomingMessage, _idleMs: number): void {
    this.observer.exchangeReset();
  }

  /**
   * A body went silent past `UPSTREAM_IDLE_TIMEOUT_MS`: counted, and a warning logged with the
   * method and the path without its query (a query may hold anything).
   */
  stalled(req: IncomingMessage, direction: StallDirection, idleMs: number): void {
    this.observer.upstreamStalled(direction);
    const url = req.url!;
    const q = url.indexOf('?');
    this.log.warn({ direction, method: req.method, path: q === -1 ? url : url.slice(0, q), idleMs }, STALL_MESSAGES[direction]);
  }
}
