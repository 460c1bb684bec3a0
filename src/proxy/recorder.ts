import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Log } from '../core/log.js';

/**
 * The one place the request path reports from, and the interfaces it reports to: the observer
 * (the metrics), the access log, and the tracer when tracing is on. The proxy owns these
 * interfaces; the wiring hands their implementations in, so the request path knows nothing of how
 * it is counted or traced.
 */

/** Which body went silent: the caller's request body, the gateway's answer, or the caller's reading of it. */
export type StallDirection = 'request' | 'response' | 'send';

/** What the proxy reports of its requests (implemented by the metrics). */
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

/** One forwarded request's trace, held by its exchange, which tells it what happens in order. */
export interface RequestTrace {
  /** The request waits for a token: its span is linked to the fetch that ends the wait. */
  awaitingToken(): void;
  /** An attempt is sent with `headers` (a flat list): its span starts and its `traceparent` is set in them. */
  attempt(headers: string[], kind: AttemptKind): void;
  /** The attempt's answer began with `status`, or it failed (`status` 0, `error` its code). */
  attemptEnded(status: number, error?: string): void;
  /** The request ended with `status`: its server span ends. */
  ended(status: number): void;
}

/** The traces of the request path (docs/operations.md, "Traces"), when tracing is on. */
export interface RequestTracer {
  /** A request is forwarded: its server span starts, continuing the caller's `traceparent`. */
  began(req: IncomingMessage, target: string): RequestTrace;
}

const STALL_MESSAGES: Record<StallDirection, string> = {
  request: 'the request body went silent; closing the caller connection',
  response: 'the gateway answer went silent; closing the caller connection',
  send: 'the caller took none of its answer; closing the caller connection',
};

export interface RecorderOptions {
  /** The route whose requests it records, named in its log lines. */
  route: string;
  observer: ProxyObserver;
  log: Log;
  /** `ACCESS_LOG`: one line per request the forwarder ended. */
  accessLog: boolean;
  /** The tracer when tracing is on; each exchange holds its own request's trace. */
  tracer?: RequestTracer | undefined;
}

/**
 * Every ended request of one route goes through here to the observer and, when `ACCESS_LOG` is
 * on, to the access log, each naming the route; requests no route took are recorded by their
 * listener's. It counts what it was told.
 */
export class Recorder {
  /** The route whose requests it records. */
  readonly route: string;
  private readonly observer: ProxyObserver;
  private readonly log: Log;
  private readonly accessLog: boolean;
  /** The tracer, when tracing is on: an exchange starts its request's trace with it. */
  readonly tracer: RequestTracer | undefined;
  /** The requests recorded so far, answered or refused. */
  served = 0;

  constructor(options: RecorderOptions) {
    this.route = options.route;
    this.observer = options.observer;
    this.log = options.log;
    this.accessLog = options.accessLog;
    this.tracer = options.tracer;
  }

  /** A request the forwarder ended (answered, refused, or abandoned), `started` from `performance.now()`. */
  answered(req: IncomingMessage, status: number, started: number): void {
    const seconds = (performance.now() - started) / 1000;
    this.served += 1;
    this.observer.requestEnded(req.method!, status, seconds);
    if (this.accessLog) {
      const durationMs = Math.round(seconds * 1e4) / 10;
      this.log.info({ route: this.route, method: req.method, path: pathOf(req), status, durationMs }, 'request');
    }
  }

  /**
   * A request the listener refused before it became a request the forwarder sees (`CONNECT`, a
   * head the parser refused): counted with no duration, and not in the access log.
   */
  refused(method: string, status: number): void {
    this.served += 1;
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
  overloadReset(): void {
    this.observer.exchangeReset();
  }

  /**
   * A body went silent past `UPSTREAM_IDLE_TIMEOUT_MS`: counted, and a warning logged with the
   * method and the path without its query (a query may hold anything).
   */
  stalled(req: IncomingMessage, direction: StallDirection, idleMs: number): void {
    this.observer.upstreamStalled(direction);
    this.log.warn({ route: this.route, direction, method: req.method, path: pathOf(req), idleMs }, STALL_MESSAGES[direction]);
  }
}

/** The request's path without its query, which may hold anything. */
function pathOf(req: IncomingMessage): string {
  const url = req.url!;
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
