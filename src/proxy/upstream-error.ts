import { type ProxyError, UpstreamDisconnectedError, UpstreamTimeoutError, UpstreamUnreachableError } from '../core/errors.js';
import { networkFailureReason } from '../net/failure-reason.js';

/**
 * The problem for a failure before the answer head reached the caller. `sent`: the request was
 * handed to an open connection (undici starts a request only on one), so the gateway may have it.
 */
export function upstreamError(
  err: Error,
  ctx: { readonly upstreamTimeoutMs: number; readonly upstreamIdleTimeoutMs: number },
  sent: boolean,
): ProxyError {
  const code = (err as { code?: string }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new UpstreamTimeoutError(`the gateway sent no response headers within ${ctx.upstreamTimeoutMs} ms`, { cause: err });
  }
  if (code === 'UND_ERR_BODY_TIMEOUT') {
    return new UpstreamTimeoutError(`the gateway's answer went silent for ${ctx.upstreamIdleTimeoutMs} ms`, { cause: err });
  }
  if (sent) {
    return new UpstreamDisconnectedError(
      `the connection to the gateway broke after the request was sent, before a complete answer ` +
        `(${networkFailureReason(err)}); the gateway may have acted on it`,
      { cause: err },
    );
  }
  return new UpstreamUnreachableError(`the gateway could not be reached (${networkFailureReason(err)})`, { cause: err });
}
