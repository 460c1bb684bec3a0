import type { DpopClient } from './dpop/index.js';
import type { TokenGrant } from './parse-response.js';

/**
 * What a forwarded request needs to be authorised with a held token, built once per token: the
 * `Authorization` value and, for a DPoP-bound token, the maker of each request's proof. The
 * forwarding path reads it and knows nothing of keys.
 */
export interface Authorization {
  readonly token: string;
  /** `Bearer <token>` or `DPoP <token>`. */
  readonly header: string;
  /**
   * DPoP-bound tokens only: a fresh `DPoP` proof for a request of `method` to the gateway target
   * `target` (path and query as received; the proof's `htu` drops the query).
   */
  readonly proof?: (method: string, target: string) => string;
  /**
   * DPoP-bound tokens only: told of every gateway answer, keeps its `DPoP-Nonce` for the next
   * proofs; true when the answer is a `401` asking for a nonce (`use_dpop_nonce`, RFC 9449 §9)
   * and carrying one: the request may be sent again with a new proof.
   */
  readonly answered?: (status: number, headers: Readonly<Record<string, string | string[] | undefined>>) => boolean;
}

/**
 * The authorization for a token just fetched: `Bearer`, or `DPoP` with proofs signed by the key
 * the token was bound to (a key rotation does not change it: the next token takes the new key).
 */
export function authorizationFor(grant: TokenGrant, dpop: DpopClient | undefined): Authorization {
  const token = grant.accessToken;
  const key = grant.dpopKey;
  if (dpop === undefined || key === undefined || grant.tokenType !== 'DPoP') return { token, header: `Bearer ${token}` };
  return {
    token,
    header: `DPoP ${token}`,
    proof: (method, target) => dpop.gatewayProof(method, target, token, key),
    answered: (status, headers) => dpop.gatewayAnswered(status, headers),
  };
}
