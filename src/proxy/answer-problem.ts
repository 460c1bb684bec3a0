import { type ProxyError, UpstreamDisconnectedError, UpstreamTimeoutError, UpstreamUnreachableError } from '../core/errors.js';
import { sendProblem } from '../core/problem.js';
import { answeredWithoutTls, networkFailureReason, NOT_TLS_REASON, notTlsAdvice } from '../net/failure-reason.js';
import type { CallerRequest } from './caller-request.js';

/**
 * Answers a request that is not forwarded (a refusal) or whose exchange failed with a problem;
 * returns the status, for the caller to record. A connection whose request body is still unread
 * is closed after the answer rather than read to its end (a refused upload is not taken in); one
 * whose request had no body stays open.
 */
export function answerProblem(request: Pick<CallerRequest, 'req' | 'res' | 'hasBody'>, err: unknown): number {
  if (request.hasBody && !request.req.complete) request.res.shouldKeepAlive = false;
  return sendProblem(request.res, err);
}

/**
 * The problem for a failure before the answer head reached the caller. `sent`: the request was
 * handed to an open connection (undici starts a request only on one), so the gateway may have it.
 * `gateway.baseUrl`: an `https:` one puts TLS in play, and with it the certificates a reason may name.
 */
export function upstreamError(
  err: Error,
  gateway: { readonly baseUrl: string; readonly upstreamTimeoutMs: number; readonly upstreamIdleTimeoutMs: number },
  sent: boolean,
): ProxyError {
  const code = (err as { code?: string }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new UpstreamTimeoutError(`the gateway sent no response headers within ${gateway.upstreamTimeoutMs} ms`, { cause: err });
  }
  if (code === 'UND_ERR_BODY_TIMEOUT') {
    return new UpstreamTimeoutError(`the gateway's answer went silent for ${gateway.upstreamIdleTimeoutMs} ms`, { cause: err });
  }
  const overTls = gateway.baseUrl.startsWith('https:');
  if (sent) {
    return new UpstreamDisconnectedError(
      `the connection to the gateway broke after the request was sent, before a complete answer ` +
        `(${networkFailureReason(err, overTls)}); the gateway may have acted on it`,
      { cause: err },
    );
  }
  if (answeredWithoutTls(err)) {
    return new UpstreamUnreachableError(`the gateway ${NOT_TLS_REASON}: ${notTlsAdvice('BASE_URL')}`, { cause: err });
  }
  return new UpstreamUnreachableError(`the gateway could not be reached (${networkFailureReason(err, overTls)})`, { cause: err });
}
