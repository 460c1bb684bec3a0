/**
 * The proxy's error hierarchy, in undici's manner: one class for each kind of failure, with a
 * stable `code`. A class a caller is answered with carries the status and title of that answer
 * as static members (the problem's own members, RFC 9457 §3.1), so `problem.ts` turns any error
 * into problem+json from its class alone. What a token request ends in lives in `token/errors.ts`.
 */

export class ProxyError extends Error {
  /** The problem's `code` and the end of its `type` URN; stable across releases. */
  static readonly code: string = 'proxy_error';
  /** The status a caller is answered with; none: the error is never an answer (a 500 `internal_error`). */
  static readonly status: number | undefined = undefined;
  /** The problem's title: the same for every occurrence of the class (RFC 9457 §3.1.4). */
  static readonly title: string = 'Proxy error';
  /** The class's {@link ProxyError.code}, on the instance as undici's errors carry theirs. */
  readonly code: string;

  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    // Once for every class: the bundle keeps class names (test/packaging/bundle.test.ts).
    this.name = new.target.name;
    this.code = (new.target as typeof ProxyError).code;
  }
}

export class NotProxiedError extends ProxyError {
  static override readonly code = 'not_proxied';
  static override readonly status = 404;
  static override readonly title = 'Not proxied';
}

export class BadPathError extends ProxyError {
  static override readonly code = 'bad_path';
  static override readonly status = 400;
  static override readonly title = 'Bad path';
}

export class BadRequestError extends ProxyError {
  static override readonly code = 'bad_request';
  static override readonly status = 400;
  static override readonly title = 'Bad request';
}

export class HeadersTooLargeError extends ProxyError {
  static override readonly code = 'headers_too_large';
  static override readonly status = 431;
  static override readonly title = 'Request header fields too large';
}

/** Answered with `Allow` (RFC 9110 §15.5.6). */
export class MethodNotAllowedError extends ProxyError {
  static override readonly code = 'method_not_allowed';
  static override readonly status = 405;
  static override readonly title = 'Method not allowed';
}

export class UpgradeNotSupportedError extends ProxyError {
  static override readonly code = 'upgrade_not_supported';
  static override readonly status = 501;
  static override readonly title = 'Upgrade not supported';
}

/** No valid token in time; answered with `Retry-After` (RFC 9110 §10.2.3). */
export class TokenUnavailableError extends ProxyError {
  static override readonly code = 'token_unavailable';
  static override readonly status = 503;
  static override readonly title = 'Token unavailable';
  /** Whole seconds after which a retry has a chance, for the `Retry-After` header. */
  readonly retryAfterS: number;
  constructor(message: string, retryAfterS: number, options?: ErrorOptions) {
    super(message, options);
    this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }
}

/**
 * The process is near its memory limit and sheds new requests until memory falls back
 * (docs/operations.md, "When memory runs short"); answered with `Retry-After` (RFC 9110 §10.2.3).
 */
export class OverloadedError extends ProxyError {
  static override readonly code = 'overloaded';
  static override readonly status = 503;
  static override readonly title = 'Overloaded';
  /** Whole seconds after which a retry has a chance: the sampler looks ten times a second. */
  readonly retryAfterS = 1;
}

/** The gateway could not be reached: the request was never sent. */
export class UpstreamUnreachableError extends ProxyError {
  static override readonly code = 'upstream_unreachable';
  static override readonly status = 502;
  static override readonly title = 'Upstream unreachable';
}

/**
 * The connection to the gateway broke after the request was sent and before a complete answer
 * head: the gateway may have acted on it, so only an idempotent request may be sent again.
 */
export class UpstreamDisconnectedError extends ProxyError {
  static override readonly code = 'upstream_disconnected';
  static override readonly status = 502;
  static override readonly title = 'Upstream disconnected';
}

export class UpstreamTimeoutError extends ProxyError {
  static override readonly code = 'upstream_timeout';
  static override readonly status = 504;
  static override readonly title = 'Upstream timeout';
}

/** A pass-through credential malformed or refused; answered with a Basic challenge (RFC 7617 §2). */
export class InvalidClientError extends ProxyError {
  static override readonly code = 'invalid_client';
  static override readonly status = 401;
  static override readonly title = 'Invalid client';
}

/** No configured credential and none in the request; answered with a Basic challenge (RFC 7617 §2). */
export class CredentialsRequiredError extends ProxyError {
  static override readonly code = 'credentials_required';
  static override readonly status = 401;
  static override readonly title = 'Credentials required';
}

/** Configuration problems, all of them, each naming its setting. Never an answer: the proxy does not start. */
export class ConfigError extends ProxyError {
  static override readonly code = 'invalid_config';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(
      `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems.map((p) => `  - ${p}`).join('\n'),
    );
    this.problems = problems;
  }
}
