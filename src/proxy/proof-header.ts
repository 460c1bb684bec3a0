import type { Authorization } from '../token/held-token.js';
import type { DpopGateway } from '../token/dpop/index.js';

/**
 * The `DPoP` proof on a forwarded request (RFC 9449 §7.1). The caller's `Authorization` and `DPoP`
 * never go upstream (caller-request.ts drops them); the proxy's `Authorization` is the last pair
 * of the raw header list, and a DPoP-bound token's proof is the pair just before it, signed anew
 * for each send.
 */

/** A request to a gateway, as its proof names it: its method, its target there, and the gateway. */
export interface ProofTarget {
  readonly method: string;
  /** The target as the gateway gets it after its path prefix (path and query as received). */
  readonly target: string;
  readonly gateway: DpopGateway;
}

/**
 * Puts a fresh proof for `to` on a forwarded request's raw header list, in the pair before the
 * proxy's `Authorization`, for a DPoP-bound token; takes an earlier send's proof away for a
 * Bearer one (a replay whose new token came back Bearer). `hasProof` tells whether the list carries
 * a proof now; returns whether it carries one after.
 */
export function setProof(headers: string[], auth: Authorization, to: ProofTarget, hasProof: boolean): boolean {
  const n = headers.length;
  if (auth.proof === undefined) {
    if (hasProof) headers.splice(n - 4, 2);
    return false;
  }
  const proof = auth.proof(to.method, to.target, to.gateway);
  if (hasProof) headers[n - 3] = proof;
  else headers.splice(n - 2, 0, 'dpop', proof);
  return true;
}
