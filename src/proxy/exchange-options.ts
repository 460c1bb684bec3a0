/**
 * What an exchange (exchange.ts) is given: the token source it authorises with, and the options
 * every exchange shares, read once by the forwarder (forward.ts).
 */
import type { Dispatcher } from 'undici';
import type { Log } from '../core/log.js';
import type { Authorization } from '../token/authorization.js';
import type { ReadBudget } from '../overload/read-budget.js';
import type { Recorder } from './observer.js';
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

/** The options, and the path prefix of `BASE_URL` without its trailing slash: read once. */
export type Shared = Readonly<ExchangeOptions & { basePath: string }>;

/** Reads the options once, for every exchange to share. */
export function shareOptions(options: ExchangeOptions): Shared {
  return { ...options, basePath: new URL(options.baseUrl).pathname.replace(/\/$/, '') };
}
