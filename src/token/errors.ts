/**
 * What a token request ends in when it yields no usable token. None of these is an answer to a
 * caller (a request waiting for a token gets `token_unavailable`, with one of these as its
 * cause); `diagnose.ts` turns them into what an operator reads. None carries a secret or a token.
 */
import { ProxyError } from '../core/errors.js';

/** Outcome of one token request, as counted by `ticket_auth_proxy_token_fetches_total`. */
export type FetchOutcome = 'success' | 'rejected' | 'rate_limited' | 'server_error' | 'network_error' | 'timeout' | 'invalid_response';

/** A token request that did not yield a usable token. */
export class TokenFetchError extends ProxyError {
  static override readonly code = 'token_fetch_failed';
  readonly outcome: Exclude<FetchOutcome, 'success'>;
  /** HTTP status of the token endpoint's answer, when there was one. */
  readonly status: number | undefined;
  /** RFC 6749 §5.2 `error` code, when the endpoint sent one. */
  readonly oauthError: string | undefined;
  /** RFC 6749 §5.2 `error_description`, when the endpoint sent one. */
  readonly oauthErrorDescription: string | undefined;
  /** Least wait before the next attempt, from `Retry-After` (ms). */
  readonly retryAfterMs: number | undefined;
  constructor(
    outcome: Exclude<FetchOutcome, 'success'>,
    message: string,
    details: {
      status?: number | undefined;
      oauthError?: string | undefined;
      oauthErrorDescription?: string | undefined;
      retryAfterMs?: number | undefined;
      cause?: unknown;
    } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.outcome = outcome;
    this.status = details.status;
    this.oauthError = details.oauthError;
    this.oauthErrorDescription = details.oauthErrorDescription;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** What a refused request was made of: never a secret, only the names of the settings. */
export interface RefusalContext {
  /** The settings the client's proof is made of (its authentication method's explanation). */
  readonly credentials: string | undefined;
  /** Another authentication method worth trying, when there is one. */
  readonly alternative: string | undefined;
  /** Whether the request carried a `scope` (TOKEN_SCOPE). */
  readonly scopeSet: boolean;
}

/**
 * A refusal by the token endpoint (HTTP 400, 401 or 403, with an OAuth error body or none), with
 * what the refused request was made of, so the diagnosis can name the settings to check first.
 */
export class TokenRefusedError extends TokenFetchError {
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

/**
 * `DPOP=required` and the identity provider answered a DPoP token request with a Bearer token:
 * an invalid response, since a Bearer token is what the setting forbids.
 */
export class DpopBearerError extends TokenFetchError {
  constructor(status: number) {
    super('invalid_response', 'token endpoint answered with a Bearer token, but DPOP=required asks for a DPoP-bound one', { status });
  }
}

/**
 * A client assertion that could not be sent (file missing, not a JWT, expired). Its message
 * names the file and never holds the assertion, so `/readyz` and `check` may show it whole.
 */
export class ClientAssertionError extends TokenFetchError {}

/**
 * `ISSUER_URL`'s metadata (RFC 8414 §3) could not be read or used, so no token request could be
 * sent. Counted as what happened: `network_error` or `timeout` when it could not be reached,
 * `server_error` or `rate_limited` for the identity provider's own 5xx or 429, and
 * `invalid_response` when no document, or no usable one, is there (a wrong `ISSUER_URL`, as a token
 * URL that answers 404 is); never `rejected`, since no credential was sent. Its message names
 * `ISSUER_URL` and its hint says what to look at, so `/readyz` and `check` show both whole.
 */
export class IssuerMetadataError extends TokenFetchError {
  /** What the operator should look at. */
  readonly hint: string;
  constructor(
    outcome: Exclude<FetchOutcome, 'success' | 'rejected'>,
    message: string,
    hint: string,
    details: { status?: number | undefined; retryAfterMs?: number | undefined; cause?: unknown } = {},
  ) {
    super(outcome, message, details);
    this.hint = hint;
  }
}
