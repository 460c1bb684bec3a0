/**
 * What an operator is told about a failed token fetch: which endpoint, what went wrong, and where
 * to look. The one place that account is built: the token source's log line, `check` and the
 * `/readyz` reason all take it from here, so they say the same.
 */
import { TokenFetchError } from '../core/errors.js';
import { withoutUserinfo } from '../core/redact.js';
import { ClientAssertionError } from './client-auth.js';

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
  /** True only for a genuine client-authentication failure (`invalid_client`, `invalid_grant`). */
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
const ASSERTION =
  'the assertion was not sent: whoever writes the file (the kubelet, a SPIFFE agent) must keep a current JWT in it; a rotated file is tried at once';

/** RFC 6749 §5.2 and RFC 8707 §2 codes, each with what the operator should look at. */
const OAUTH_HINTS: Readonly<Record<string, string>> = {
  invalid_client: 'check the client credentials: CLIENT_ID and the secret, key or assertion',
  invalid_grant: 'check the client credentials and the grant the IdP expects',
  invalid_scope: 'check TOKEN_SCOPE: the IdP does not grant this scope to this client',
  invalid_target: 'check TOKEN_PARAMS (resource/audience): the IdP does not know this target',
  unauthorized_client: "check the client's allowed grants at the IdP: it must allow client_credentials",
  unsupported_grant_type: `check the token URL (${WRONG_URL}): this endpoint does not take client_credentials`,
  invalid_request: `check the token URL (${WRONG_URL}) and TOKEN_PARAMS: the endpoint refused the request's form`,
};

function hintFor(error: TokenFetchError): string | undefined {
  if (error instanceof ClientAssertionError) return ASSERTION;
  const code = error.oauthError;
  switch (error.outcome) {
    case 'rejected':
      return (code !== undefined ? OAUTH_HINTS[code] : undefined) ?? (code === undefined || code === 'invalid_token' ? NOT_TOKEN_ENDPOINT : undefined);
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
  const code = error.oauthError;
  return {
    error,
    tokenUrl: url,
    message: error instanceof ClientAssertionError ? error.message : `${error.message} (token URL ${url})`,
    hint: expected ? hintFor(error) : undefined,
    credentialsRejected: error.outcome === 'rejected' && (code === 'invalid_client' || code === 'invalid_grant'),
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
