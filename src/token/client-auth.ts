import { randomUUID, type KeyObject } from 'node:crypto';
import type { TokenAuthMethod } from '../config/config.js';
import { TokenFetchError } from '../core/errors.js';

/** One client's identity at the token endpoint: its id, and its secret when it has one ('' when not). */
export interface Credential {
  readonly clientId: string;
  readonly clientSecret: string;
}

/**
 * The assertion could not be sent (file missing, not a JWT, expired). Its message names the file
 * and never holds the assertion, so `/readyz` and `check` may show it whole.
 */
export class ClientAssertionError extends TokenFetchError {
  override name = 'ClientAssertionError';
}

/** What a strategy adds to one token request: headers and form fields (beside grant_type). */
export interface ClientAuthParts {
  readonly headers: Record<string, string>;
  readonly form: ReadonlyArray<readonly [string, string]>;
}

/**
 * How the client proves who it is at the token endpoint (RFC 6749 §2.3, RFC 7523 §2.2,
 * RFC 8705 §2.1). Called once per token request, retries included, so assertions are fresh.
 */
export type ClientAuth = (credential: Credential, tokenUrl: string) => Promise<ClientAuthParts> | ClientAuthParts;

/** The assertion type for a JWT client assertion (RFC 7523 §2.2). */
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** Form field names that TOKEN_PARAMS may not set: the strategies and the grant own them. */
export const RESERVED_TOKEN_PARAMS: readonly string[] = [
  'grant_type',
  'client_id',
  'client_secret',
  'scope',
  'client_assertion',
  'client_assertion_type',
];

/**
 * RFC 6749 §2.3.1: id and secret are form-urlencoded (Appendix B) before they are joined for
 * Basic: the same encoder as the form body, which also encodes `!'()~`.
 */
function formEncode(s: string): string {
  return new URLSearchParams([['', s]]).toString().slice(1);
}

/** `client_secret_post`: id and secret in the form body. */
export const clientSecretPost: ClientAuth = (credential) => ({
  headers: {},
  form: [
    ['client_id', credential.clientId],
    ['client_secret', credential.clientSecret],
  ],
});

/** `client_secret_basic`: id and secret, each form-encoded, in an `Authorization: Basic` header. */
export const clientSecretBasic: ClientAuth = (credential) => {
  const pair = `${formEncode(credential.clientId)}:${formEncode(credential.clientSecret)}`;
  return { headers: { authorization: `Basic ${Buffer.from(pair).toString('base64')}` }, form: [] };
};

/**
 * The strategy for a client that authenticates with a secret: `client_secret_basic` when that is
 * the configured method, `client_secret_post` otherwise. Pass-through Basic credentials carry a
 * secret whatever the configured method, so they are sent this way.
 */
export function secretClientAuth(method: TokenAuthMethod): ClientAuth {
  return method === 'client_secret_basic' ? clientSecretBasic : clientSecretPost;
}

/** `tls_client_auth` (RFC 8705 §2.1): the certificate proves the client; the body names it only. */
export const tlsClientAuth: ClientAuth = (credential) => ({ headers: {}, form: [['client_id', credential.clientId]] });

/** Options of {@link privateKeyJwt}. */
export interface PrivateKeyJwtOptions {
  /** The current signing key (reread by the caller when its file changes). */
  key: () => KeyObject;
  alg: string;
  kid: string | undefined;
  /** Milliseconds since the epoch. */
  now: () => number;
  randomId?: () => string;
}

/** Lifetime of a signed assertion: short, since a fresh one is signed for every request. */
const ASSERTION_LIFETIME_S = 60;

/**
 * `private_key_jwt` (RFC 7523 §3, OpenID Connect Core §9): a fresh assertion signed for every
 * token request: iss = sub = client id, aud = token endpoint URL, random jti, exp = iat + 60 s.
 */
export function privateKeyJwt(options: PrivateKeyJwtOptions): ClientAuth {
  const randomId = options.randomId ?? randomUUID;
  return async (credential, tokenUrl) => {
    const iat = Math.floor(options.now() / 1000);
    const header = options.kid === undefined ? { alg: options.alg } : { alg: options.alg, kid: options.kid };
    // jose is loaded only where an assertion is signed: what a configuration does not use is not
    // loaded (about 0.8 MB of resident memory for every other proxy).
    const { SignJWT } = await import('jose');
    const assertion = await new SignJWT({})
      .setProtectedHeader({ ...header, typ: 'JWT' })
      .setIssuer(credential.clientId)
      .setSubject(credential.clientId)
      .setAudience(tokenUrl)
      .setJti(randomId())
      .setIssuedAt(iat)
      .setExpirationTime(iat + ASSERTION_LIFETIME_S)
      .sign(options.key());
    return {
      headers: {},
      form: [
        ['client_id', credential.clientId],
        ['client_assertion_type', JWT_BEARER],
        ['client_assertion', assertion],
      ],
    };
  };
}

/** Options of {@link clientAssertionFile}. */
export interface ClientAssertionFileOptions {
  path: string;
  /** Reads the file afresh; injected so tests need no files. */
  read: (path: string) => string;
  assertionType: string;
  /** Milliseconds since the epoch. */
  now: () => number;
}

/** What `check` may show of an assertion: never the assertion itself. */
export interface AssertionSummary {
  issuer: string | undefined;
  subject: string | undefined;
  audience: string | undefined;
  /** Seconds since the epoch, when the assertion says. */
  expiresAt: number | undefined;
}

/** Reads the claims of a compact JWT without verifying it; throws when it is not one. */
export function summarizeAssertion(jwt: string): AssertionSummary {
  if (!/^[\w-]+\.[\w-]+\.[\w-]*$/.test(jwt)) throw new Error('not a compact JWT');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
  } catch {
    throw new Error('not a compact JWT (its payload is not JSON)');
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) throw new Error('not a compact JWT (its payload is not a JSON object)');
  const { iss, sub, aud, exp } = claims as Record<string, unknown>;
  const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const audience = Array.isArray(aud) ? aud.filter((a) => typeof a === 'string').join(', ') : text(aud);
  return { issuer: text(iss), subject: text(sub), audience, expiresAt: typeof exp === 'number' ? exp : undefined };
}

/**
 * `client_assertion_file`: a JWT another party writes and rotates (a projected service
 * account token, a JWT-SVID) is read afresh for every request. An expired one is not sent: the
 * error names the file and the moment it expired.
 */
export function clientAssertionFile(options: ClientAssertionFileOptions): ClientAuth {
  return (credential) => {
    let assertion: string;
    let summary: AssertionSummary;
    try {
      assertion = options.read(options.path).trim();
      summary = summarizeAssertion(assertion);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new ClientAssertionError('network_error', `client assertion file ${options.path} cannot be used (${reason})`, { cause: err });
    }
    if (summary.expiresAt !== undefined && summary.expiresAt * 1000 <= options.now()) {
      const at = new Date(summary.expiresAt * 1000).toISOString();
      throw new ClientAssertionError(
        'network_error',
        `client assertion in ${options.path} expired at ${at}: the projected token is not being rotated`,
      );
    }
    return {
      headers: {},
      form: [
        ['client_id', credential.clientId],
        ['client_assertion_type', options.assertionType],
        ['client_assertion', assertion],
      ],
    };
  };
}

/**
 * Parses TOKEN_PARAMS: a form-encoded string from the environment, or a map of a
 * string or a list of strings from the file. Repeated names are kept in order. Returns the
 * problems instead of throwing, so the configuration reports them all together.
 */
export function parseTokenParams(value: unknown, name: string): { params: [string, string][]; problems: string[] } {
  const params: [string, string][] = [];
  const problems: string[] = [];
  if (typeof value === 'string') {
    for (const [k, v] of new URLSearchParams(value)) params.push([k, v]);
  } else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) {
      const list = Array.isArray(v) ? v : [v];
      for (const item of list) {
        if (typeof item !== 'string' && typeof item !== 'number') {
          problems.push(`${name}.${k} must be a string or a list of strings`);
        } else params.push([k, String(item)]);
      }
    }
  } else {
    problems.push(`${name} must be a form-encoded string (a=1&b=2) or a map of names to a string or a list of strings`);
  }
  for (const [k] of params) {
    if (k === '') problems.push(`${name} has a field with an empty name`);
    else if (RESERVED_TOKEN_PARAMS.includes(k)) {
      problems.push(`${name} may not set ${k}: the proxy sets it (use TOKEN_SCOPE for scope)`);
    }
  }
  return { params: problems.length > 0 ? [] : params, problems: [...new Set(problems)] };
}
