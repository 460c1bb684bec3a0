/** What every JWT client assertion shares (RFC 7521 §4.2, RFC 7523 §2.2), whoever signs it. */
import type { ClientAuthParts } from './method.js';

/** The assertion type for a JWT client assertion (RFC 7523 §2.2). */
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** Lifetime of an assertion the proxy signs: short, since a fresh one is signed for every request. */
export const ASSERTION_LIFETIME_S = 60;

/** The form of a token request authenticated by an assertion (RFC 7521 §4.2): the client named, the assertion and its type. */
export function assertionParts(clientId: string, assertionType: string, assertion: string): ClientAuthParts {
  return {
    headers: {},
    form: [
      ['client_id', clientId],
      ['client_assertion_type', assertionType],
      ['client_assertion', assertion],
    ],
  };
}

/**
 * The claims of an assertion signed for one token request (RFC 7523 §3): iss = sub = client id,
 * aud = token endpoint URL, a random jti, exp = iat + {@link ASSERTION_LIFETIME_S}.
 */
export function assertionClaims(clientId: string, tokenUrl: string, jti: string, nowMs: number) {
  const iat = Math.floor(nowMs / 1000);
  return { iss: clientId, sub: clientId, aud: tokenUrl, jti, iat, exp: iat + ASSERTION_LIFETIME_S };
}
