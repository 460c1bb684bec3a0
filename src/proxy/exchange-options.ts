/**
 * What an exchange (exchange.ts) is given: the settings every exchange shares, read once by the
 * forwarder (forward.ts); its one caller's request; and the token source it authorises with.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Log } from '../core/log.js';
import type { Authorization } from '../token/authorization.js';
import type { ReadBudget } from '../overload/read-budget.js';
import type { Recorder } from './observer.js';
import { RequestHeaders } from './request-headers.js';
import { SeenHeaderNames } from './response-headers.js';
import type { StalledCallers } from './stalled-callers.js';

/** A token source as forwarding uses it (token/token-source.ts is one): the proxy owns this interface. */
export interface Authorizer {
  /** How to authorise a request now, or undefined when no valid token is held. Synchronous: the hot path. */
  authorization(): Authorization | undefined;
  /** How to authorise a request once a valid token is held; rejects when none can be had in time. */
  authorize(): Promise<Authorization>;
  /** The gateway answered 401 for `token`: drops it if still held; returns whether a replay can expect another. */
  invalidate(token: string): boolean;
}

/** What every exchange shares, given once to the forwarder (forward.ts). */
export interface ExchangeOptions {
  /** Connection pool to the gateway's origin. */
  pool: Dispatcher;
  /** The gateway again, every request on a new connection: for a retry. */
  freshPool: Dispatcher;
  /** `BASE_URL` without its trailing slash, path prefix included. */
  baseUrl: string;
  upstreamTimeoutMs: number;
  /** `UPSTREAM_IDLE_TIMEOUT_MS`: the longest silence inside a request or response body. */
  upstreamIdleTimeoutMs: number;
  replayBodyLimitBytes: number;
  /** Where the body bytes read into the process are reported (overload/read-budget.ts). */
  budget: ReadBudget;
  recorder: Recorder;
  /** Where a caller that takes none of its answer is reported: the send timeout, the overload action. */
  callers: StalledCallers;
  log: Log;
  /** Origin for a rewritten `Location` when the caller sent no `Host`; undefined on a Unix socket, which has none. */
  listenOrigin: string | undefined;
}

/**
 * The options as every exchange reads them: with the path prefix of `BASE_URL` (without its
 * trailing slash) and the gateway's header names as last seen (response-headers.ts), both made once.
 */
export type ExchangeSettings = Readonly<ExchangeOptions & { basePath: string; seenNames: SeenHeaderNames }>;

/** Reads the options once, for every exchange of one forwarder. */
export function exchangeSettings(options: ExchangeOptions): ExchangeSettings {
  return { ...options, basePath: new URL(options.baseUrl).pathname.replace(/\/$/, ''), seenNames: new SeenHeaderNames() };
}

/**
 * One caller's request as the forwarder and its exchange know it: Node's request and response,
 * when it began, whether it asked for `100 Continue`, and what its headers said, read once
 * (request-headers.ts). One object a request: the header facts and the request share it.
 */
export class CallerRequest extends RequestHeaders {
  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** `performance.now()` when the request reached the forwarder. */
    readonly started: number,
    /** Arrived through the listener's `checkContinue` event: `100 Continue` is the proxy's to send. */
    readonly expectContinue: boolean,
  ) {
    super(req.rawHeaders);
  }
}
