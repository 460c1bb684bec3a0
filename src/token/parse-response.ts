import { TokenFetchError } from './errors.js';
import type { DpopKey } from './dpop/index.js';
import { REGISTERED_ERROR_CODES } from './oauth-error-codes.js';

/** A usable token and how long it lives, measured from when its request was sent. */
export interface TokenGrant {
  readonly accessToken: string;
  readonly lifetimeMs: number;
  /** `DPoP` when the token is bound to a key (RFC 9449 §5); absent reads as `Bearer`. */
  readonly tokenType?: 'Bearer' | 'DPoP';
  /** With a DPoP-bound token: the key it is bound to, which signs every proof made for it. */
  readonly dpopKey?: DpopKey;
  /** The scope granted, when the answer names it (RFC 6749 §5.1); `check` shows it. */
  readonly scope?: string;
}

/** `Retry-After` is honoured up to this. */
export const RETRY_AFTER_CAP_MS = 5 * 60_000;

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
/** RFC 9110 §5.6.7: IMF-fixdate, the obsolete RFC 850 form and asctime. */
const HTTP_DATE = new RegExp(
  `^(?:${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT` +
    `|${LONG_DAY}, \\d{2}-${MONTH}-\\d{2} ${TIME} GMT` +
    `|${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4})$`,
);

/**
 * Parses `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) into milliseconds,
 * capped at five minutes. Undefined when absent or unparseable.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  let ms: number;
  if (/^\d+$/.test(v)) ms = Number(v) * 1000;
  else {
    // Only the three HTTP-date forms: Date.parse alone takes '1' or 'junk 2024' for dates.
    if (!HTTP_DATE.test(v)) return undefined;
    const at = Date.parse(v);
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - now);
  }
  return Math.min(ms, RETRY_AFTER_CAP_MS);
}

/** Reads the `exp` claim of a JWT (seconds since the epoch), without verifying anything. */
export function jwtExpiry(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    const exp = (claims as { exp?: unknown } | null)?.exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp : undefined;
  } catch {
    return undefined;
  }
}

export interface ParseOptions {
  /** Lifetime assumed without `expires_in` and without a JWT `exp` (`TOKEN_DEFAULT_TTL_S`). */
  defaultTtlS: number;
  /** When the token request was sent (ms since the epoch): a JWT's `exp` is counted from it. */
  sentAt: number;
  /** Whether the request carried a DPoP proof: then `token_type` `DPoP` is accepted too. */
  dpop?: boolean;
  /**
   * What the request carried that must never be shown (a secret, an assertion, a proof): removed
   * from the endpoint's `error` and `error_description` before they are kept, for a provider may
   * echo what it was sent.
   */
  secrets?: readonly string[];
}

/**
 * Turns a token endpoint's answer into a {@link TokenGrant} (RFC 6749 §5.1), or throws a
 * {@link TokenFetchError} whose `outcome` is the label of `ticket_auth_proxy_token_fetches_total`.
 * Error messages never quote the token.
 */
export function parseTokenResponse(
  status: number,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: string,
  options: ParseOptions,
): TokenGrant {
  if (status < 200 || status > 299) {
    const { error, description } = oauthError(body, options.secrets ?? []);
    const retryAfterMs = parseRetryAfter(first(headers['retry-after']), options.sentAt);
    // 400, 401, 403: a refusal, with an OAuth error body or none (some identity providers answer
    // a wrong secret with a bare 403). 404/405: no token endpoint at this URL.
    const outcome =
      status === 400 || status === 401 || status === 403
        ? 'rejected'
        : status === 429
          ? 'rate_limited'
          : status === 404 || status === 405
            ? 'invalid_response'
            : 'server_error';
    throw new TokenFetchError(
      outcome,
      `token endpoint answered ${status}${error ? ` ${error}` : ''}${description ? `: ${description}` : ''}`,
      { status, oauthError: error, oauthErrorDescription: description, retryAfterMs },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new TokenFetchError('invalid_response', `token endpoint answered ${status} with a body that is not JSON`, { status });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new TokenFetchError('invalid_response', 'token endpoint answered with JSON that is not an object', { status });
  }
  const r = json as Record<string, unknown>;
  if (typeof r.access_token !== 'string' || r.access_token === '') {
    throw new TokenFetchError('invalid_response', 'token response has no access_token string', { status });
  }
  const type = typeof r.token_type === 'string' ? r.token_type.toLowerCase() : r.token_type;
  const tokenType = type === undefined || type === 'bearer' ? 'Bearer' : type === 'dpop' && options.dpop === true ? 'DPoP' : undefined;
  if (tokenType === undefined) {
    const dpopOff = type === 'dpop' ? ' (a DPoP-bound token: set DPOP=on for the proxy to send DPoP proofs)' : '';
    throw new TokenFetchError('invalid_response', `token response has token_type ${JSON.stringify(r.token_type)}, not Bearer${dpopOff}`, {
      status,
    });
  }
  let lifetimeMs: number | undefined;
  if (r.expires_in !== undefined && r.expires_in !== null) {
    const n =
      typeof r.expires_in === 'number'
        ? r.expires_in
        : typeof r.expires_in === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(r.expires_in)
          ? Number(r.expires_in)
          : NaN;
    if (!Number.isFinite(n) || n <= 0) {
      throw new TokenFetchError(
        'invalid_response',
        `token response has expires_in ${JSON.stringify(r.expires_in)}, not a positive number`,
        {
          status,
        },
      );
    }
    lifetimeMs = n * 1000;
  }
  // A JWT's exp bounds the lifetime too: an IdP that rounds the issue time down can set it up to a
  // second before sent + expires_in, so the earlier of the two is taken.
  const exp = jwtExpiry(r.access_token);
  if (exp !== undefined) {
    const untilExpMs = exp * 1000 - options.sentAt;
    if (untilExpMs <= 0) {
      throw new TokenFetchError('invalid_response', 'token response holds a JWT that has already expired', { status });
    }
    lifetimeMs = lifetimeMs === undefined ? untilExpMs : Math.min(lifetimeMs, untilExpMs);
  }
  lifetimeMs ??= options.defaultTtlS * 1000;
  const scope = grantedScope(r.scope);
  return scope === undefined
    ? { accessToken: r.access_token, lifetimeMs, tokenType }
    : { accessToken: r.access_token, lifetimeMs, tokenType, scope };
}

/** RFC 6749 §3.3: scope tokens separated by spaces, kept to their character set and a sane length for a terminal. */
function grantedScope(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const tokens = value
    .replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '')
    .split(' ')
    .filter(Boolean)
    .join(' ');
  return tokens === '' ? undefined : tokens.length > 1000 ? `${tokens.slice(0, 1000)}...` : tokens;
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The longest `error_description` kept: enough for a provider's sentence, short for a log line. */
export const DESCRIPTION_MAX = 256;

/** The shortest secret taken out of a provider's words; a shorter one found there has them withheld whole. */
const SECRET_MIN = 4;

/** Where a secret was in a provider's words. */
const REDACTED = '[redacted]';

/** A description that held a secret too short to take out without garbling it. */
const WITHHELD = '[withheld: it held a secret the request carried]';

/**
 * RFC 6749 §5.2's `error` and `error_description`, as they may be shown. Every secret the request
 * carried is taken out of the description (as sent, and as form-encoded; again once its
 * unprintable characters are out, which cannot hide one), which is then cut to
 * {@link DESCRIPTION_MAX} characters; one that still holds a secret (too short to take out) is
 * withheld whole. Only the printable ASCII of the codes' character set (%x20-21 / %x23-5B /
 * %x5D-7E) is kept. A code is kept when it is a registered one, or holds no secret; otherwise it
 * is dropped whole: a diagnosis reads codes, not fragments. A field that is not a string is none.
 */
function oauthError(body: string, secrets: readonly string[]): { error: string | undefined; description: string | undefined } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { error: undefined, description: undefined };
  }
  if (typeof parsed !== 'object' || parsed === null) return { error: undefined, description: undefined };
  const j = parsed as Record<string, unknown>;
  const forms = secrets.filter((x) => x !== '').flatMap((x) => [x, encodeURIComponent(x), new URLSearchParams({ x }).toString().slice(2)]);
  // Longest first: a secret that contains another is taken out whole.
  forms.sort((a, b) => b.length - a.length);
  const long = forms.filter((x) => x.length >= SECRET_MIN);
  const holds = (v: string): boolean => forms.some((x) => v.includes(x));
  const scrub = (v: string): string => long.reduce((text, x) => text.replaceAll(x, REDACTED), v);
  const printable = (v: string): string => v.replace(/[^\x20-\x7e]/g, '');
  let error: string | undefined;
  if (typeof j.error === 'string') {
    const code = printable(j.error).slice(0, 64);
    if (code !== '' && (REGISTERED_ERROR_CODES.has(code) || (!holds(j.error) && !holds(code)))) error = code;
  }
  let description: string | undefined;
  if (typeof j.error_description === 'string') {
    const text = scrub(printable(scrub(j.error_description)));
    description = holds(text) ? WITHHELD : text.slice(0, DESCRIPTION_MAX) || undefined;
  }
  return { error, description };
}
