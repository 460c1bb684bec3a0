import type { IncomingMessage, ServerResponse } from 'node:http';
import { MethodNotAllowedError, type ProxyError, UpgradeNotSupportedError } from '../core/errors.js';
import type { TokenSource } from '../token/token-source.js';
import type { RequestHeaders } from './headers.js';
import { checkTarget } from './path-guard.js';
import type { SelectSource } from './select-source.js';

/** One named check a request must pass before it is forwarded: the error to answer, or undefined. */
export type Refusal = (req: IncomingMessage, headers: RequestHeaders, res: ServerResponse) => ProxyError | undefined;

/**
 * `TRACE` would echo the request, the proxy's `Authorization` included, back to the caller.
 * (`CONNECT` never reaches the forwarder: Node hands it to the listener's `connect` event, which
 * refuses it in server.ts.)
 */
export const refuseTrace: Refusal = (req) => (req.method === 'TRACE' ? new MethodNotAllowedError('TRACE is not forwarded') : undefined);

/** Protocol upgrades (WebSocket and the like) are not forwarded; the connection closes after the answer. */
export const refuseUpgrade: Refusal = (_req, headers, res) => {
  if (headers.upgrade === undefined) return undefined;
  res.shouldKeepAlive = false;
  return new UpgradeNotSupportedError(`protocol upgrades (${headers.upgrade}) are not forwarded`);
};

/** Only origin-form targets under `/api/v1/`, none a server could read as another path (path-guard.ts). */
export const guardTarget: Refusal = (req) => checkTarget(req.url!);

/** The refusals, in the order they are tried. */
export const REFUSALS: readonly Refusal[] = [refuseTrace, refuseUpgrade, guardTarget];

/**
 * Runs the refusals in order and, when none applies, the last check: which token source serves
 * the request (select-source.ts), which may itself refuse it (`credentials_required`,
 * `invalid_client`). Returns the source, or the error to answer with.
 */
export function admit(
  req: IncomingMessage,
  headers: RequestHeaders,
  res: ServerResponse,
  selectSource: SelectSource,
): TokenSource | ProxyError {
  for (let i = 0; i < REFUSALS.length; i++) {
    const refusal = REFUSALS[i]!(req, headers, res);
    if (refusal !== undefined) return refusal;
  }
  return selectSource(req);
}
