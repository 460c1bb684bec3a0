/**
 * What an operator is told about a failed token fetch: which endpoint, what went wrong, and where
 * to look. The one place that account is built: the token source's log line, `check` and the
 * `/readyz` reason all take it from here, so they say the same.
 */
import type { Log } from '../core/log.js';
import { withoutUserinfo } from '../core/redact.js';
import { answeredWithoutTls, notTlsAdvice } from '../net/failure-reason.js';
import {
  ClientAssertionError,
  DpopBearerError,
  IssuerMetadataError,
  TokenFetchError,
  TokenRefusedError,
  type RefusalContext,
} from './errors.js';
import { nearestOAuthCode } from './oauth-error-codes.js';

/** The operator-facing account of one failed token fetch. */
export interface TokenDiagnosis {
  /** The failure as counted by the fetch metrics (`network_error` for anything unexpected). */
  readonly error: TokenFetchError;
  /** The token URL without userinfo: not secret, and the first thing to check (undefined before an issuer's metadata named it). */
  readonly tokenUrl: string | undefined;
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
 * Where the token requests went, as a diagnosis names it: a token URL (given as a string: the
 * settings named it), or the one `ISSUER_URL`'s metadata named (`discovery/`'s `TokenEndpoint`).
 */
export type EndpointName = string | { readonly url: string | undefined; readonly issuer: string | undefined };

/** What a hint says of a token URL that is wrong, or unreachable: the settings that chose it. */
interface UrlWords {
  readonly wrong: string;
  readonly unreachable: string;
  /** An API's answer, not a token endpoint's. */
  readonly notTokenEndpoint: string;
  /** Reached, but answering the TLS handshake with something else. */
  readonly notTls: string;
}

const BY_SETTINGS: UrlWords = {
  wrong: 'is TOKEN_URL/BASE_URL right?',
  unreachable: 'check the host name and port of TOKEN_URL/BASE_URL, and HTTPS_PROXY/NO_PROXY',
  notTokenEndpoint:
    "this does not look like a token endpoint: is TOKEN_URL/BASE_URL right? (BASE_URL is the gateway's base, without /api/v1)",
  notTls: notTlsAdvice('TOKEN_URL/BASE_URL'),
};
const BY_ISSUER: UrlWords = {
  wrong: "it is the token endpoint ISSUER_URL's metadata names, read again at most once a minute in case it moved: is ISSUER_URL right?",
  unreachable:
    "check the host name and port of the token endpoint ISSUER_URL's metadata names, and HTTPS_PROXY/NO_PROXY (the metadata is " +
    'read again at most once a minute in case it moved)',
  notTokenEndpoint: "this does not look like a token endpoint, yet ISSUER_URL's metadata names it: is ISSUER_URL right?",
  notTls: "it was reached, but ISSUER_URL's metadata names a port that does not serve HTTPS: is ISSUER_URL right?",
};

/**
 * Any error a fetch can end in, as a {@link TokenFetchError}: one is returned as it is; anything
 * else (a bug, a strategy that threw) becomes a `network_error` quoting its message.
 */
export function asFetchError(err: unknown): TokenFetchError {
  if (err instanceof TokenFetchError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new TokenFetchError('network_error', `token request failed (${message})`, { cause: err });
}

const DPOP_REQUIRED =
  'turn on DPoP-bound tokens for this client at the identity provider (Keycloak: the client setting for DPoP-bound access ' +
  'tokens; Okta: Require DPoP), or set DPOP=on to accept Bearer tokens';
const ASSERTION =
  'the assertion was not sent: whoever writes the file (the kubelet, a SPIFFE agent) must keep a current JWT in it; a ' +
  'rotated file is tried at once';

/** RFC 6749 §5.2 and RFC 8707 §2 codes, each with what the operator should look at. */
const OAUTH_HINTS: Readonly<Record<string, (r: RefusalContext, url: UrlWords) => string>> = {
  invalid_client: (r) => `check the client credentials: ${r.credentials ?? ANY_CREDENTIALS}${alternative(r)}`,
  invalid_grant: (r) => `check the client credentials (${r.credentials ?? ANY_CREDENTIALS}) and the grant the IdP expects`,
  invalid_scope: (r) =>
    r.scopeSet
      ? 'check TOKEN_SCOPE: the IdP does not grant this scope to this client'
      : 'check TOKEN_SCOPE: it is not set, and this IdP may want one',
  invalid_target: () => 'check TOKEN_PARAMS (resource/audience): the IdP does not know this target',
  unauthorized_client: () => "check the client's allowed grants at the IdP: it must allow client_credentials",
  unsupported_grant_type: (_r, url) => `check the token URL (${url.wrong}): this endpoint does not take client_credentials`,
  invalid_request: (_r, url) => `check the token URL (${url.wrong}) and TOKEN_PARAMS: the endpoint refused the request's form`,
  // A resource server's answer (RFC 6750 §3.1): the URL is an API, not a token endpoint.
  invalid_token: (_r, url) => url.notTokenEndpoint,
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

function rejectedHint(error: TokenFetchError, url: UrlWords): string {
  const r = error instanceof TokenRefusedError ? error.refusal : NO_REFUSAL_CONTEXT;
  const code = error.oauthError;
  if (code === undefined) return `the token endpoint refused the client without an error code: ${credentialsFirst(r)}`;
  const reading = readCode(code);
  if (reading === undefined) return `${code} is no RFC 6749 error code: ${credentialsFirst(r)}`;
  const hint = OAUTH_HINTS[reading]!(r, url);
  return reading === code ? hint : `${code} (read as ${reading}): ${hint}`;
}

function hintFor(error: TokenFetchError, url: UrlWords): string | undefined {
  if (error instanceof ClientAssertionError) return ASSERTION;
  if (error instanceof DpopBearerError) return DPOP_REQUIRED;
  if (error instanceof IssuerMetadataError) return error.hint;
  switch (error.outcome) {
    case 'rejected':
      return rejectedHint(error, url);
    case 'invalid_response':
      return error.status === 404 || error.status === 405 ? url.wrong : undefined;
    case 'network_error':
      return answeredWithoutTls(error.cause) ? url.notTls : url.unreachable;
    default:
      return undefined;
  }
}

/**
 * Turns a failed fetch into the message and hint an operator sees. Pure: the token URL is only
 * shown, never fetched. Never quotes a secret (the errors carry none); a client assertion error
 * names the file and why its assertion was not sent, and an issuer metadata error `ISSUER_URL`,
 * not the token URL no request was sent to.
 */
export function diagnoseTokenFailure(err: unknown, endpoint: EndpointName): TokenDiagnosis {
  const error = asFetchError(err);
  // Anything but a TokenFetchError failed before a request could be sent: the host is not to blame.
  const expected = err instanceof TokenFetchError;
  const { url: tokenUrl, issuer } = typeof endpoint === 'string' ? { url: endpoint, issuer: undefined } : endpoint;
  const url = tokenUrl === undefined ? undefined : displayTokenUrl(tokenUrl);
  const whole = error instanceof ClientAssertionError || error instanceof IssuerMetadataError || url === undefined;
  const code = readCode(error.oauthError);
  return {
    error,
    tokenUrl: url,
    message: whole ? error.message : `${error.message} (token URL ${url})`,
    hint: expected ? hintFor(error, issuer === undefined ? BY_SETTINGS : BY_ISSUER) : undefined,
    credentialsRejected:
      error.outcome === 'rejected' && (error.oauthError === undefined || code === 'invalid_client' || code === 'invalid_grant'),
  };
}

/**
 * The account of a failed fetch for `check` and `/readyz`: the outcome the metrics counted and one
 * line, the message then the hint. Takes any error a fetch can end in.
 */
export function describeFetchFailure(error: unknown, endpoint: EndpointName): FetchFailureAccount {
  const d = diagnoseTokenFailure(error, endpoint);
  return { outcome: d.error.outcome, text: d.hint === undefined ? d.message : `${d.message}; ${d.hint}` };
}

/** The line of {@link describeFetchFailure} alone. */
export function describeTokenFailure(error: unknown, endpoint: EndpointName): string {
  return describeFetchFailure(error, endpoint).text;
}

/** A failed fetch as its log line tells it. */
export interface FetchFailure {
  /** Names the credential (never the client id or secret). */
  readonly label: string;
  /** The route it serves, when there are routes to tell apart. */
  readonly route?: string | undefined;
  /** Where the request went, when known: the diagnosis names it. */
  readonly endpoint: EndpointName | undefined;
  /** What the fetch ended in. */
  readonly err: unknown;
  /** What comes next (the attempt, when the next one starts, how long the held token lasts), in ms. */
  readonly retry: Record<string, number>;
}

/**
 * One log line per failed fetch of the credential `label`, with the account `check` and
 * `/readyz` give of it: at error level when the client's credentials were refused.
 */
export function logFetchFailure(log: Log, failure: FetchFailure): void {
  const { label, route, endpoint, err, retry } = failure;
  const error = asFetchError(err);
  const diagnosis = endpoint === undefined ? undefined : diagnoseTokenFailure(err, endpoint);
  const fields = {
    route,
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
