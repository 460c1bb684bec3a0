import type { Authorization } from '../token/authorization.js';

/**
 * The proxy's own credentials on a forwarded request. The caller's `Authorization` and `DPoP` never
 * go upstream (request-headers.ts drops them); the proxy's `Authorization` is the last pair of the
 * raw header list, reserved once per request and given its value at each send.
 */

/** Reserves the last pair of a forwarded request's raw header list for the proxy's `Authorization`. */
export function reserveAuthorization(headers: string[]): void {
  headers.push('authorization', '');
}

/**
 * Puts the proxy's credentials on a forwarded request's raw header list, whose last pair is the
 * proxy's `Authorization`: its value, and for a DPoP-bound token a fresh `DPoP` proof in the pair
 * just before it (RFC 9449 §7.1), made for the request's method and target. `hasProof` tells
 * whether the list carries a proof from an earlier send (a replay); returns whether it carries one
 * now. A Bearer token costs one assignment.
 */
export function setAuthorization(headers: string[], auth: Authorization, method: string, target: string, hasProof: boolean): boolean {
  const n = headers.length;
  headers[n - 1] = auth.header;
  if (auth.proof === undefined) {
    // A replay whose new token came back Bearer: the old proof goes.
    if (hasProof) headers.splice(n - 4, 2);
    return false;
  }
  const proof = auth.proof(method, target);
  if (hasProof) headers[n - 3] = proof;
  else headers.splice(n - 2, 0, 'dpop', proof);
  return true;
}
