import { createHmac, randomUUID } from 'node:crypto';
import { assertionClaims, assertionParts, JWT_BEARER } from './jwt-assertion.js';
import type { Authenticate } from './method.js';
import { secretMethod } from './secret-method.js';

/** Options of {@link clientSecretJwtAssertion}. */
export interface ClientSecretJwtOptions {
  /** Milliseconds since the epoch. */
  now: () => number;
  randomId?: () => string;
}

/**
 * A fresh HS256 assertion for every token request (RFC 7523 §2.2, OpenID Connect Core §9),
 * signed with the UTF-8 octets of the secret. The secret itself is never sent.
 */
export function clientSecretJwtAssertion(options: ClientSecretJwtOptions): Authenticate {
  const randomId = options.randomId ?? randomUUID;
  return (credential, tokenUrl) => {
    const part = (v: object): string => Buffer.from(JSON.stringify(v)).toString('base64url');
    const claims = assertionClaims(credential.clientId, tokenUrl, randomId(), options.now());
    const input = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`;
    const signature = createHmac('sha256', Buffer.from(credential.clientSecret, 'utf8')).update(input).digest('base64url');
    return assertionParts(credential.clientId, JWT_BEARER, `${input}.${signature}`);
  };
}

/** `client_secret_jwt`: the client proves it holds the secret by signing an assertion with it. */
export const clientSecretJwt = secretMethod({
  name: 'client_secret_jwt',
  authenticate: (now) => clientSecretJwtAssertion({ now }),
  explainRefusal: () => ({
    credentials:
      'CLIENT_ID and the secret the assertion is signed with (CLIENT_SECRET_FILE or CLIENT_SECRET); the identity provider ' +
      'must allow client_secret_jwt for this client',
  }),
  checkLines: ['client authentication: client_secret_jwt, an assertion signed HS256 with the secret (never sent)'],
});
