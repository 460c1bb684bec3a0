import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { ProxyError } from '../core/errors.js';
import type { Log } from '../core/log.js';
import { answerProblem, type ForwardContext } from './forwarding.js';
import { readRequestHeaders } from './headers.js';
import type { Recorder } from './observer.js';
import { admit } from './refusals.js';
import { RetryingForwarding } from './retry.js';
import type { SelectSource } from './select-source.js';

export interface ForwarderOptions {
  /** Connection pool to the gateway's origin. */
  pool: Dispatcher;
  /** `BASE_URL` without its trailing slash, path prefix included. */
  baseUrl: string;
  selectSource: SelectSource;
  upstreamTimeoutMs: number;
  /** `UPSTREAM_IDLE_TIMEOUT_MS`; 60 s when not given. */
  upstreamIdleTimeoutMs?: number;
  /** The gateway, every request on a new connection (for a request sent again); the pool when not given. */
  freshPool?: Dispatcher;
  replayBodyLimitBytes: number;
  recorder: Recorder;
  log: Log;
  /** Origin for a rewritten `Location` when the caller sent no `Host`. */
  listenOrigin: string;
}

/** The proxy listener's request handler; `expectContinue` is true for the `checkContinue` event. */
export type Forward = (req: IncomingMessage, res: ServerResponse, expectContinue?: boolean) => void;

/**
 * Creates the proxy listener's request handler. A request meets the refusals (refusals.ts) in
 * order, the last of which picks its token source; then it is forwarded with a token, replayed
 * once after a gateway 401 (replay.ts) or a pooled connection that broke under
 * it (retry.ts), and its answer streamed back (forwarding.ts).
 * `100 Continue` is sent once the request is known to be forwarded.
 */
export function createForwarder(options: ForwarderOptions): Forward {
  const ctx: ForwardContext = {
    pool: options.pool,
    baseUrl: options.baseUrl,
    basePath: new URL(options.baseUrl).pathname.replace(/\/$/, ''),
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    upstreamIdleTimeoutMs: options.upstreamIdleTimeoutMs ?? 60_000,
    freshPool: options.freshPool ?? options.pool,
    replayBodyLimitBytes: options.replayBodyLimitBytes,
    recorder: options.recorder,
    log: options.log,
    listenOrigin: options.listenOrigin,
  };
  const selectSource = options.selectSource;
  return function forward(req, res, expectContinue = false) {
    const started = performance.now();
    const headers = readRequestHeaders(req.rawHeaders);
    const source = admit(req, headers, res, selectSource);
    if (source instanceof ProxyError) {
      answerProblem(ctx, req, res, source, started, headers.hasBody);
      return;
    }
    new RetryingForwarding(ctx, req, res, headers, source, started, expectContinue).start();
  };
}
