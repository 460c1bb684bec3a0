import { createHmac, randomUUID, type KeyObject } from 'node:crypto';
import type { TokenAuthMethod } from '../config/config.js';

/** One client's identity at the token endpoint: its id, and its secret when it has one ('' when not). */
export interface Credential {
  readonly clientId: string;
  readonly clientSecret: string;
}

/** What a strategy adds to one token request: headers and form fields (beside grant_type). */
export interface ClientAuthParts {
  readonly headers: Record<string, string>;
  readonly form: ReadonlyArray<readonly [string, string]>;
  /** The settings this proof is made of, named first when the endpoint refuses the client. */
  readonly credentials?: string;
  /** Another method worth trying when the endpoint refuses this one; never quotes the secret. */
  readonly alternative?: string;
}

/**
 * How the client proves who it is at the token endpoint (RFC 6749 §2.3, RFC 7523 §2.2,
 * RFC 8705 §2.1). Called once per token request, retries included, so assertions are fresh.
 */
export type ClientAuth = (credential: Credential, tokenUrl: string) => Promise<ClientAuthParts> | ClientAuthParts;

/** Lifetime of a signed assertion: short, since a fresh one is signed for every request. */
const ASSERTION_LIFETIME_S = 60;

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

const SECRET = 'CLIENT_ID and the secret (CLIENT_SECRET_FILE or CLIENT_SECRET)';

/** `client_secret_post`: id and secret in the form body. */
export const clientSecretPost: ClientAuth = (credential) => ({
  headers: {},
  form: [
    ['client_id', credential.clientId],
    ['client_secret', credential.clientSecret],
  ],
  credentials: SECRET,
});

/** Whether RFC 6749 §2.3.1's form-encoding changes `s` (`+ / : & = % ~ !`, spaces, non-ASCII...). */
export function changedByFormEncoding(s: string): boolean {
  return formEncode(s) !== s;
}

/**
 * `client_secret_basic`: id and secret, each form-encoded, in an `Authorization: Basic` header.
 * Some identity providers compare the Basic credentials without decoding them: when encoding
 * changes the id or the secret, a refusal suggests `client_secret_post`, without saying which
 * characters the secret holds.
 */
export const clientSecretBasic: ClientAuth = (credential) => {
  const pair = `${formEncode(credential.clientId)}:${formEncode(credential.clientSecret)}`;
  const changed = [
    ...(changedByFormEncoding(credential.clientId) ? ['the client id'] : []),
    ...(changedByFormEncoding(credential.clientSecret) ? ['the secret'] : []),
  ];
  return {
    headers: { authorization: `Basic ${Buffer.from(pair).toString('base64')}` },
    form: [],
    credentials: SECRET,
    ...(changed.length === 0
      ? {}
      : {
          alternative:
            `${changed.join(' and ')} ${changed.length > 1 ? 'have' : 'has'} characters that RFC 6749 §2.3.1 form-encodes in ` +
            `Basic credentials ` +
            '(such as + / : & = % ~ !), which some identity providers compare without decoding: try TOKEN_AUTH_METHOD=client_secret_post',
        }),
  };
};

/** Options of {@link clientSecretJwt}. */
export interface ClientSecretJwtOptions {
  /** Milliseconds since the epoch. */
  now: () => number;
  randomId?: () => string;
}

/**
 * `client_secret_jwt` (RFC 7523 §2.2, OpenID Connect Core §9): a fresh HS256 assertion for every
 * token request, signed with the UTF-8 octets of the secret: iss = sub = client id, aud = token
 * endpoint URL, random jti, exp = iat + 60 s. The secret itself is never sent.
 */
export function clientSecretJwt(options: ClientSecretJwtOptions): ClientAuth {
  const randomId = options.randomId ?? randomUUID;
  return (credential, tokenUrl) => {
    const iat = Math.floor(options.now() / 1000);
    const part = (v: object): string => Buffer.from(JSON.stringify(v)).toString('base64url');
    const claims = {
      iss: credential.clientId,
      sub: credential.clientId,
      aud: tokenUrl,
      jti: randomId(),
      iat,
      exp: iat + ASSERTION_LIFETIME_S,
    };
    const input = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`;
    const signature = createHmac('sha256', Buffer.from(credential.clientSecret, 'utf8')).update(input).digest('base64url');
    return {
      headers: {},
      form: [
        ['client_id', credential.clientId],
        ['client_assertion_type', JWT_BEARER],
        ['client_assertion', `${input}.${signature}`],
      ],
      credentials:
        'CLIENT_ID and the secret the assertion is signed with (CLIENT_SECRET_FILE or CLIENT_SECRET); the identity provider ' +
        'must allow client_secret_jwt for this client',
    };
  };
}

/** The methods whose proof is the client secret (sent, or signing an assertion). */
export const SECRET_METHODS: readonly TokenAuthMethod[] = ['client_secret_post', 'client_secret_basic', 'client_secret_jwt'];

/**
 * The strategy for a client that authenticates with a secret: `client_secret_basic` or
 * `client_secret_jwt` when that is the configured method, `client_secret_post` otherwise.
 * Pass-through Basic credentials carry a secret whatever the configured method, so they are sent
 * this way. `now` dates a `client_secret_jwt` assertion.
 */
export function secretClientAuth(method: TokenAuthMethod, now: () => number = Date.now): ClientAuth {
  if (method === 'client_secret_basic') return clientSecretBasic;
  if (method === 'client_secret_jwt') return clientSecretJwt({ now });
  return clientSecretPost;
}

/** `tls_client_auth` (RFC 8705 §2.1): the certificate proves the client; the body names it only. */
export const tlsClientAuth: ClientAuth = (credential) => ({
  headers: {},
  form: [['client_id', credential.clientId]],
  credentials: 'CLIENT_ID and the client certificate (TLS_CLIENT_CERT_FILE) the identity provider has registered for it',
});

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
      credentials:
        'CLIENT_ID and the key (CLIENT_ASSERTION_KEY_FILE, CLIENT_ASSERTION_KID) whose public key the identity provider has ' +
        'registered for it',
    };
  };
}
