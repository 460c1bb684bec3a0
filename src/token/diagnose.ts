/**
 * What an operator is told about a failed token fetch: which endpoint, what went wrong, and where
 * to look. The one place that account is built: the token source's log line, `check` and the
 * `/readyz` reason all take it from here, so they say the same.
 */
import type { Log } from '../core/log.js';
import { withoutUserinfo } from '../core/redact.js';
import { ClientAssertionError, DpopBearerError, TokenFetchError, TokenRefusedError, type RefusalContext } from './errors.js';
import { nearestOAuthCode } from './oauth-error-codes.js';

/** The operator-facing account of one failed token fetch. */
export interface TokenDiagnosis {
  /** The failure as counted by the fetch metrics (`network_error` for anything unexpected). */
  readonly error: TokenFetchError;
  /** The token URL without userinfo: not secret, and the first thing to check. */
  readonly tokenUrl: string;
  /** What happened, naming the token URL when a request was sent. */
  readonly message: string;
  /** What to look at, when there is a likely mistake to point to. */
  readonly hint: string | undefined;
  /**
   * True for a refusal of the client's credentials: `invalid_client`, `invalid_grant` (or a code
   * read as one), and a 400, 401 or 403 without an error code.
   */
  readonly credentialsRejected: boolean;
}

/** One failed fetch in one line: its metric outcome and the text an operator reads. */
export interface FetchFailureAccount {
  readonly outcome: string;
  readonly text: string;
}

/** The token URL as it may be shown: without user information (the configuration refuses it anyway). */
export function displayTokenUrl(tokenUrl: string): string {
  return withoutUserinfo(tokenUrl);
}

/**
 * Any error a fetch can end in, as a {@link TokenFetchError}: one is returned as it is; anything
 * else (a bug, a strategy that threw) becomes a `network_error` quoting its message.
 */
export function asFetchError(err: unknown): TokenFetchError {
  if (err instanceof TokenFetchError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new TokenFetchError('network_error', `token request failed (${message})`, { cause: err });
}

const WRONG_URL = 'is TOKEN_URL/BASE_URL right?';
const NOT_TOKEN_ENDPOINT = `this does not look like a token endpoint: ${WRONG_URL} (BASE_URL is the gateway's base, without /api/v1)`;
const UNREACHABLE = 'check the host name and port of TOKEN_URL/BASE_URL, and HTTPS_PROXY/NO_PROXY';
const DPOP_REQUIRED =
  'turn on DPoP-bound tokens for this client at the identity provider (Keycloak: the client setting for DPoP-bound access ' +
  'tokens; Okta: Require DPoP), or set DPOP=on to accept Bearer tokens';
const ASSERTION =
  'the assertion was not sent: whoever writes the file (the kubelet, a SPIFFE agent) must keep a current JWT in it; a ' +
  'rotated file is tried at once';

/** RFC 6749 §5.2 and RFC 8707 §2 codes, each with what the operator should look at. */
const OAUTH_HINTS: Readonly<Record<string, (r: RefusalContext) => string>> = {
  invalid_client: (r) => `check the client credentials: ${r.credentials ?? ANY_CREDENTIALS}${alternative(r)}`,
  invalid_grant: (r) => `check the client credentials (${r.credentials ?? ANY_CREDENTIALS}) and the grant the IdP expects`,
  invalid_scope: (r) =>
    r.scopeSet
      ? 'check TOKEN_SCOPE: the IdP does not grant this scope to this client'
      : 'check TOKEN_SCOPE: it is not set, and this IdP may want one',
  invalid_target: () => 'check TOKEN_PARAMS (resource/audience): the IdP does not know this target',
  unauthorized_client: () => "check the client's allowed grants at the IdP: it must allow client_credentials",
  unsupported_grant_type: () => `check the token URL (${WRONG_URL}): this endpoint does not take client_credentials`,
  invalid_request: () => `check the token URL (${WRONG_URL}) and TOKEN_PARAMS: the endpoint refused the request's form`,
  // A resource server's answer (RFC 6750 §3.1): the URL is an API, not a token endpoint.
  invalid_token: () => NOT_TOKEN_ENDPOINT,
  // RFC 9449 §8: asked for a nonce again right after the proxy sent the one it was given.
  use_dpop_nonce: () => 'the token endpoint refused the DPoP nonce it had just given; check DPOP and the clock of this host',
  invalid_dpop_proof: () =>
    'the token endpoint refused the DPoP proof: check DPOP_KEY_FILE and DPOP_ALG (the algorithms the identity provider ' +
    'accepts) and the clock of this host',
};

const ANY_CREDENTIALS = 'CLIENT_ID and the secret, key or assertion';
const NO_REFUSAL_CONTEXT: RefusalContext = { credentials: undefined, alternative: undefined, scopeSet: true };

const alternative = (r: RefusalContext): string => (r.alternative === undefined ? '' : `; ${r.alternative}`);

/** A refusal without a code (or with one no RFC knows): the credentials first, then the scope. */
function credentialsFirst(r: RefusalContext): string {
  const scope = r.scopeSet ? '' : '; TOKEN_SCOPE is not set, and some identity providers refuse a request without a scope the same way';
  return `check the client credentials first: ${r.credentials ?? ANY_CREDENTIALS}${scope}${alternative(r)}`;
}

/** The code an answer is read as: an RFC code as it is, another by its obvious reading, if any. */
function readCode(code: string | undefined): string | undefined {
  return code === undefined ? undefined : code in OAUTH_HINTS ? code : nearestOAuthCode(code);
}

function rejectedHint(error: TokenFetchError): string {
  const r = error instanceof TokenRefusedError ? error.refusal : NO_REFUSAL_CONTEXT;
  const code = error.oauthError;
  if (code === undefined) return `the token endpoint refused the client without an error code: ${credentialsFirst(r)}`;
  const reading = readCode(code);
  if (reading === undefined) return `${code} is no RFC 6749 error code: ${credentialsFirst(r)}`;
  const hint = OAUTH_HINTS[reading]!(r);
  return reading === code ? hint : `${code} (read as ${reading}): ${hint}`;
}

function hintFor(error: TokenFetchError): string | undefined {
  if (error instanceof ClientAssertionError) return ASSERTION;
  if (error instanceof DpopBearerError) return DPOP_REQUIRED;
  switch (error.outcome) {
    case 'rejected':
      return rejectedHint(error);
    case 'invalid_response':
      return error.status === 404 || error.status === 405 ? WRONG_URL : undefined;
    case 'network_error':
      return UNREACHABLE;
    default:
      return undefined;
  }
}

/**
 * Turns a failed fetch into the message and hint an operator sees. Pure: the token URL is only
 * shown, never fetched. Never quotes a secret (the errors carry none); a client assertion error
 * names the file and why its assertion was not sent, not the token URL it was never sent to.
 */
export function diagnoseTokenFailure(err: unknown, tokenUrl: string): TokenDiagnosis {
  const error = asFetchError(err);
  // Anything but a TokenFetchError failed before a request could be sent: the host is not to blame.
  const expected = err instanceof TokenFetchError;
  const url = displayTokenUrl(tokenUrl);
  const code = readCode(error.oauthError);
  return {
    error,
    tokenUrl: url,
    message: error instanceof ClientAssertionError ? error.message : `${error.message} (token URL ${url})`,
    hint: expected ? hintFor(error) : undefined,
    credentialsRejected:
      error.outcome === 'rejected' && (error.oauthError === undefined || code === 'invalid_client' || code === 'invalid_grant'),
  };
}

/**
 * The account of a failed fetch for `check` and `/readyz`: the outcome the metrics counted and one
 * line, the message then the hint. Takes any error a fetch can end in.
 */
export function describeFetchFailure(error: unknown, tokenUrl: string): FetchFailureAccount {
  const d = diagnoseTokenFailure(error, tokenUrl);
  return { outcome: d.error.outcome, text: d.hint === undefined ? d.message : `${d.message}; ${d.hint}` };
}

/** The line of {@link describeFetchFailure} alone. */
export function describeTokenFailure(error: unknown, tokenUrl: string): string {
  return describeFetchFailure(error, tokenUrl).text;
}

/**
 * One log line per failed fetch of the credential `label`, with the account `check` and
 * `/readyz` give of it: at error level when the client's credentials were refused.
 */
export function logFetchFailure(log: Log, label: string, tokenUrl: string | undefined, err: unknown, retry: Record<string, number>): void {
  const error = asFetchError(err);
  const diagnosis = tokenUrl === undefined ? undefined : diagnoseTokenFailure(err, tokenUrl);
  const fields = {
    credential: label,
    outcome: error.outcome,
    status: error.status,
    error: error.oauthError,
    errorDescription: error.oauthErrorDescription,
    reason: error.message,
    ...(diagnosis === undefined ? {} : { tokenUrl: diagnosis.tokenUrl, hint: diagnosis.hint }),
    ...retry,
  };
  const credentialsRejected = diagnosis ? diagnosis.credentialsRejected : error.outcome === 'rejected';
  if (credentialsRejected) log.error(fields, 'token endpoint rejected the client credentials');
  else log.warn(fields, 'token fetch failed');
}
