/**
 * The proxy's error hierarchy. Every error the proxy answers a caller with, or reports to an
 * operator, is a {@link ProxyError} with a stable `code`; `problem.ts` is the one place that maps
 * a code to an HTTP status and body.
 */

/** Outcome of one token request, as counted by `ticket_auth_proxy_token_fetches_total`. */
export type FetchOutcome = 'success' | 'rejected' | 'rate_limited' | 'server_error' | 'network_error' | 'timeout' | 'invalid_response';

export class ProxyError extends Error {
  readonly code: string = 'proxy_error';
  override name = 'ProxyError';
}

export class NotProxiedError extends ProxyError {
  override readonly code = 'not_proxied';
  override name = 'NotProxiedError';
}

export class BadPathError extends ProxyError {
  override readonly code = 'bad_path';
  override name = 'BadPathError';
}

export class BadRequestError extends ProxyError {
  override readonly code = 'bad_request';
  override name = 'BadRequestError';
}

export class HeadersTooLargeError extends ProxyError {
  override readonly code = 'headers_too_large';
  override name = 'HeadersTooLargeError';
}

export class MethodNotAllowedError extends ProxyError {
  override readonly code = 'method_not_allowed';
  override name = 'MethodNotAllowedError';
}

export class UpgradeNotSupportedError extends ProxyError {
  override readonly code = 'upgrade_not_supported';
  override name = 'UpgradeNotSupportedError';
}

export class TokenUnavailableError extends ProxyError {
  override readonly code = 'token_unavailable';
  override name = 'TokenUnavailableError';
  /** Whole seconds after which a retry has a chance, for the `Retry-After` header. */
  readonly retryAfterS: number;
  constructor(message: string, retryAfterS: number, options?: ErrorOptions) {
    super(message, options);
    this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }
}

/** The gateway could not be reached: the request was never sent. */
export class UpstreamUnreachableError extends ProxyError {
  override readonly code = 'upstream_unreachable';
  override name = 'UpstreamUnreachableError';
}

/**
 * The connection to the gateway broke after the request was sent and before a complete answer
 * head: the gateway may have acted on it, so only an idempotent request may be sent again.
 */
export class UpstreamDisconnectedError extends ProxyError {
  override readonly code = 'upstream_disconnected';
  override name = 'UpstreamDisconnectedError';
}

export class UpstreamTimeoutError extends ProxyError {
  override readonly code = 'upstream_timeout';
  override name = 'UpstreamTimeoutError';
}

export class InvalidClientError extends ProxyError {
  override readonly code = 'invalid_client';
  override name = 'InvalidClientError';
}

export class CredentialsRequiredError extends ProxyError {
  override readonly code = 'credentials_required';
  override name = 'CredentialsRequiredError';
}

/** Configuration problems, all of them, each naming its setting. */
export class ConfigError extends ProxyError {
  override readonly code = 'invalid_config';
  override name = 'ConfigError';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(
      `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems.map((p) => `  - ${p}`).join('\n'),
    );
    this.problems = problems;
  }
}

/** A token request that did not yield a usable token. Never carries the secret or a token. */
export class TokenFetchError extends ProxyError {
  override readonly code = 'token_fetch_failed';
  override name = 'TokenFetchError';
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
