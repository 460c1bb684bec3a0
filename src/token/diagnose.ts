/**
 * What an operator is told about a failed token fetch: which endpoint, what went wrong, and
 * where to look (the log line, `check` and the `/readyz` reason all say the same).
 */
import { TokenFetchError } from '../core/errors.js';
import { ClientAssertionError } from './client-auth.js';

/** The operator-facing account of one failed token fetch. */
export interface TokenDiagnosis {
  /** The token URL without userinfo: not secret, and the first thing to check. */
  readonly tokenUrl: string;
  /** What happened, naming the token URL. */
  readonly message: string;
  /** What to look at, when there is a likely mistake to point to. */
  readonly hint: string | undefined;
  /** True only for a genuine client-authentication failure (`invalid_client`). */
  readonly credentialsRejected: boolean;
}

/** The token URL as it may be shown: userinfo stripped; unparseable input is not echoed. */
export function displayTokenUrl(tokenUrl: string): string {
  try {
    const u = new URL(tokenUrl);
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return '(an unparseable token URL)';
  }
}

const WRONG_URL = 'is TOKEN_URL/BASE_URL right?';
const NOT_TOKEN_ENDPOINT = `this does not look like a token endpoint: ${WRONG_URL} (BASE_URL is the gateway's base, without /api/v1)`;

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

/**
 * Turns a failed fetch into the message and hint an operator sees. Pure: the token URL is only
 * shown, never fetched. Never quotes a secret (the error carries none).
 */
export function diagnoseTokenFailure(error: TokenFetchError, tokenUrl: string): TokenDiagnosis {
  const url = displayTokenUrl(tokenUrl);
  const code = error.oauthError;
  let hint: string | undefined;
  if (error.outcome === 'rejected') {
    hint = code !== undefined ? OAUTH_HINTS[code] : undefined;
    if (hint === undefined) hint = code === undefined || code === 'invalid_token' ? NOT_TOKEN_ENDPOINT : undefined;
  } else if (error.outcome === 'invalid_response' && (error.status === 404 || error.status === 405)) {
    hint = WRONG_URL;
  } else if (error.outcome === 'network_error') {
    hint = 'check the host name and port of TOKEN_URL/BASE_URL, and HTTPS_PROXY/NO_PROXY';
  }
  return {
    tokenUrl: url,
    message: `${error.message} (token URL ${url})`,
    hint,
    credentialsRejected: error.outcome === 'rejected' && (code === 'invalid_client' || code === 'invalid_grant'),
  };
}

/** One line: the message and, when there is one, the hint. */
export function describeTokenFailure(error: TokenFetchError, tokenUrl: string): string {
  const d = diagnoseTokenFailure(error, tokenUrl);
  return d.hint === undefined ? d.message : `${d.message}; ${d.hint}`;
}

/**
 * What `check` and `/readyz` say of a failed fetch: its outcome and one line of text. A client
 * assertion that cannot be used is told by its own message (it names the file and why).
 */
export function describeFetchFailure(error: unknown, tokenUrl: string): { outcome: string; text: string } {
  if (error instanceof ClientAssertionError) return { outcome: error.outcome, text: error.message };
  if (error instanceof TokenFetchError) return { outcome: error.outcome, text: describeTokenFailure(error, tokenUrl) };
  const outcome = (error as { outcome?: unknown } | undefined)?.outcome;
  return { outcome: typeof outcome === 'string' ? outcome : 'error', text: error instanceof Error ? error.message : String(error) };
}
