import { CredentialsRequiredError, ProxyError } from '../core/errors.js';
import type { Authorization } from '../token/held-token.js';
import { parseBasicCredentials } from '../token/basic-credentials.js';
import type { Credential } from '../token/client-auth/index.js';

/**
 * The seam between the request path and the token side: what forwarding needs of a token source
 * (token/held-token.ts is one). The proxy owns this interface; a unit test hands it a plain object.
 */
export interface Authorizer {
  /** How to authorise a request now, or undefined when no valid token is held. Synchronous: the hot path. */
  authorization(): Authorization | undefined;
  /** How to authorise a request once a valid token is held; rejects when none can be had in time. */
  authorize(): Promise<Authorization>;
  /** The gateway answered 401 for `token`: drops it if still held; returns whether a replay can expect another. */
  invalidate(token: string): boolean;
}

/** The pass-through authorizers, one per caller's own Basic credentials. */
export interface PassthroughAuthorizers {
  /** The authorizer for these credentials, or the error to answer with (`invalid_client`, `token_unavailable`). */
  authorizerFor(credential: Credential): Authorizer | ProxyError;
}

/** The answer to a request without credentials where none are configured (pass-through alone). */
export const CREDENTIALS_REQUIRED = new CredentialsRequiredError('no credentials are configured; send Basic credentials');

/**
 * The authorizer of a request on a route with pass-through on (`PASSTHROUGH_BASIC`), from the
 * `Authorization` it sent: Basic credentials are served by their own authorizer, malformed ones,
 * or ones the token endpoint rejected, are answered `invalid_client`; any other request is served
 * by `otherwise` (the configured credential's, or {@link CREDENTIALS_REQUIRED}). A route with
 * pass-through off serves every request with that one, and never comes here.
 */
export function passthroughOr(
  passthrough: PassthroughAuthorizers,
  authorization: string | undefined,
  otherwise: Authorizer | ProxyError,
): Authorizer | ProxyError {
  const basic = parseBasicCredentials(authorization);
  if (basic instanceof ProxyError) return basic;
  return basic !== undefined ? passthrough.authorizerFor(basic) : otherwise;
}
