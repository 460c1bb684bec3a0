/**
 * A refusal by the token endpoint (HTTP 400, 401 or 403, with an OAuth error body or none) and
 * what the request it refused was made of, so the diagnosis can name the settings to check first.
 */
import { TokenFetchError } from '../core/errors.js';

/** What a refused request was made of: never a secret, only the names of the settings. */
export interface RefusalContext {
  /** The settings the client's proof is made of (the strategy's `credentials`). */
  readonly credentials: string | undefined;
  /** Another authentication method worth trying (the strategy's `alternative`). */
  readonly alternative: string | undefined;
  /** Whether the request carried a `scope` (TOKEN_SCOPE). */
  readonly scopeSet: boolean;
}

/** A `rejected` fetch, with what the refused request was made of. */
export class TokenRefusedError extends TokenFetchError {
  override name = 'TokenRefusedError';
  readonly refusal: RefusalContext;
  constructor(error: TokenFetchError, refusal: RefusalContext) {
    super(error.outcome, error.message, {
      status: error.status,
      oauthError: error.oauthError,
      oauthErrorDescription: error.oauthErrorDescription,
      retryAfterMs: error.retryAfterMs,
    });
    this.refusal = refusal;
  }
}

/** The error codes of RFC 6749 §5.2, RFC 6750 §3.1 (`invalid_token`) and RFC 8707 §2 (`invalid_target`). */
export const OAUTH_ERROR_CODES: readonly string[] = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'invalid_target',
  'invalid_token',
];

/** The words of a code, lower case and sorted: `scope_invalid`, `InvalidScope` and `invalid-scope` agree. */
function words(code: string): string {
  return code
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w !== '')
    .sort()
    .join(' ');
}

/**
 * The RFC code an error code outside the RFCs obviously means: the same words in another order,
 * case or separator (`scope_invalid` reads as `invalid_scope`). Undefined when the code is an RFC
 * code already, or when no reading is obvious.
 */
export function nearestOAuthCode(code: string): string | undefined {
  if (OAUTH_ERROR_CODES.includes(code)) return undefined;
  const mine = words(code);
  return OAUTH_ERROR_CODES.find((c) => words(c) === mine);
}

/**
 * `DPOP=required` and the identity provider answered a DPoP token request with a Bearer token:
 * an invalid response, since a Bearer token is what the setting forbids.
 */
export class DpopBearerError extends TokenFetchError {
  override name = 'DpopBearerError';
  constructor(status: number) {
    super('invalid_response', 'token endpoint answered with a Bearer token, but DPOP=required asks for a DPoP-bound one', { status });
  }
}
