import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { TokenFetchError } from '../../src/token/errors.js';
import type { Config } from '../../src/config/config.js';
import { assertionFromFile, summarizeAssertion } from '../../src/token/client-auth/client-assertion-file.js';
import { changedByFormEncoding, clientSecretBasic } from '../../src/token/client-auth/client-secret-basic.js';
import { clientSecretJwt, clientSecretJwtAssertion } from '../../src/token/client-auth/client-secret-jwt.js';
import { clientSecretPost } from '../../src/token/client-auth/client-secret-post.js';
import { JWT_BEARER, type AuthMethod } from '../../src/token/client-auth/index.js';
import { privateKeyJwtAssertion } from '../../src/token/client-auth/private-key-jwt.js';
import { tlsClientAuth } from '../../src/token/client-auth/tls-client-auth.js';
import { clientAuthOf as configure } from '../helpers/client-auth.js';

const CRED = { clientId: 'client-1', clientSecret: 's3cret' };
const URL_ = 'https://idp.example/token';
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

const clientAuthOf = (method: AuthMethod) => configure(method, {}, NOW);

function jwt(claims: Record<string, unknown>): string {
  const b = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b({ alg: 'RS256', typ: 'JWT' })}.${b(claims)}.c2ln`;
}

describe('secret strategies', () => {
  it('client_secret_post puts the id and secret in the form and no header', async () => {
    expect(await clientAuthOf(clientSecretPost).authenticate(CRED, URL_)).toMatchObject({
      headers: {},
      form: [
        ['client_id', 'client-1'],
        ['client_secret', 's3cret'],
      ],
    });
  });

  it('client_secret_basic puts the id and secret in a Basic header and nothing in the form', async () => {
    const parts = await clientAuthOf(clientSecretBasic).authenticate(CRED, URL_);
    expect(parts.form).toEqual([]);
    expect(parts.headers.authorization).toBe(`Basic ${Buffer.from('client-1:s3cret').toString('base64')}`);
  });

  it('tls_client_auth names the client and sends no secret', async () => {
    expect(await clientAuthOf(tlsClientAuth).authenticate(CRED, URL_)).toEqual({ headers: {}, form: [['client_id', 'client-1']] });
  });
});

describe('client_secret_basic and secrets that a provider may not decode', () => {
  it.each(['a+b', 'a/b', 'a:b', 'a&b', 'a=b', 'a%41', 'a~b', 'a!b', 'a b', 'é', "a'b", 'a(b)'])(
    'finds that form-encoding changes %j',
    (secret) => {
      expect(changedByFormEncoding(secret)).toBe(true);
    },
  );

  it('finds nothing to change in letters, digits and -._*', () => {
    expect(changedByFormEncoding('Abc-123_x.y*z')).toBe(false);
  });

  it('suggests client_secret_post when the secret would be changed, without quoting it', () => {
    const explained = clientAuthOf(clientSecretBasic).explainRefusal({ clientId: 'client-1', clientSecret: 'p+ss/w0rd~!' });
    expect(explained.alternative).toContain('try TOKEN_AUTH_METHOD=client_secret_post');
    expect(explained.alternative).toContain('the secret has characters');
    expect(explained.alternative).not.toContain('p+ss');
    expect(explained.credentials).toContain('CLIENT_ID');
    expect(clientSecretBasic.explainRefusal({ clientId: 'a b', clientSecret: 'x' }, {} as Config).alternative).toContain(
      'the client id has characters',
    );
    expect(clientAuthOf(clientSecretBasic).explainRefusal(CRED).alternative).toBeUndefined();
    expect(clientAuthOf(clientSecretPost).explainRefusal({ clientId: 'client-1', clientSecret: 'p+ss' }).alternative).toBeUndefined();
  });
});

describe('client_secret_jwt', () => {
  it('signs a fresh HS256 assertion with the secret for every request: iss = sub = client id, aud = token URL, exp = iat + 60 s; the secret is not sent', async () => {
    let n = 0;
    const auth = clientSecretJwtAssertion({ now: () => NOW, randomId: () => `jti-${++n}` });
    const a = await auth(CRED, URL_);
    const b = await auth(CRED, URL_);
    const form = Object.fromEntries(a.form);
    expect(a.headers).toEqual({});
    expect(Object.keys(form).sort()).toEqual(['client_assertion', 'client_assertion_type', 'client_id']);
    expect(form.client_assertion_type).toBe(JWT_BEARER);
    expect(form.client_assertion).not.toContain('s3cret');
    expect(Object.fromEntries(b.form).client_assertion).not.toBe(form.client_assertion);
    const key = new TextEncoder().encode('s3cret');
    const { payload, protectedHeader } = await jwtVerify(form.client_assertion!, key, {
      currentDate: new Date(NOW),
      audience: URL_,
      algorithms: ['HS256'],
    });
    expect(payload).toEqual({ iss: 'client-1', sub: 'client-1', aud: URL_, jti: 'jti-1', iat: NOW / 1000, exp: NOW / 1000 + 60 });
    expect(protectedHeader).toEqual({ alg: 'HS256', typ: 'JWT' });
    await expect(jwtVerify(form.client_assertion!, new TextEncoder().encode('other'), { currentDate: new Date(NOW) })).rejects.toThrow();
  });

  it('signs with the UTF-8 octets of a secret beyond ASCII', async () => {
    const cred = { clientId: 'client-1', clientSecret: 'gehé+im' };
    const form = Object.fromEntries((await clientSecretJwtAssertion({ now: () => NOW })(cred, URL_)).form);
    await jwtVerify(form.client_assertion!, Buffer.from('gehé+im', 'utf8'), { currentDate: new Date(NOW) });
  });

  it('is how the record authenticates, dated by the clock it is configured with', async () => {
    const form = Object.fromEntries((await clientAuthOf(clientSecretJwt).authenticate(CRED, URL_)).form);
    expect(summarizeAssertion(form.client_assertion!)).toMatchObject({ issuer: 'client-1', expiresAt: NOW / 1000 + 60 });
  });
});

describe('private_key_jwt', () => {
  for (const [type, opts, alg] of [
    ['rsa', { modulusLength: 2048 }, 'RS256'],
    ['ec', { namedCurve: 'P-256' }, 'ES256'],
    ['ed25519', {}, 'EdDSA'],
  ] as const) {
    it(`signs a fresh ${alg} assertion for every request with iss = sub = client id, aud = token URL, exp = iat + 60 s`, async () => {
      const { privateKey, publicKey } = generateKeyPairSync(type as 'rsa', opts as { modulusLength: number });
      let n = 0;
      const auth = privateKeyJwtAssertion({ key: () => privateKey, alg, kid: 'k1', now: () => NOW, randomId: () => `jti-${++n}` });
      const a = await auth(CRED, URL_);
      const b = await auth(CRED, URL_);
      const form = Object.fromEntries(a.form);
      expect(form.client_id).toBe('client-1');
      expect(form.client_assertion_type).toBe(JWT_BEARER);
      expect(form.client_secret).toBeUndefined();
      expect(Object.fromEntries(b.form).client_assertion).not.toBe(form.client_assertion);
      const { payload } = await jwtVerify(form.client_assertion!, publicKey, { currentDate: new Date(NOW), audience: URL_ });
      expect(payload).toEqual({ iss: 'client-1', sub: 'client-1', aud: URL_, jti: 'jti-1', iat: NOW / 1000, exp: NOW / 1000 + 60 });
      expect(decodeProtectedHeader(form.client_assertion!)).toEqual({ alg, kid: 'k1', typ: 'JWT' });
    });
  }
});

describe('client_assertion_file', () => {
  const live = jwt({ iss: 'https://cluster', sub: 'system:serviceaccount:ns:app', aud: 'api', exp: NOW / 1000 + 600 });

  it('sends the trimmed file content with the configured assertion type', async () => {
    const auth = assertionFromFile({ path: '/t', read: () => `  ${live}\n`, assertionType: JWT_BEARER, now: () => NOW });
    expect((await auth(CRED, URL_)).form).toEqual([
      ['client_id', 'client-1'],
      ['client_assertion_type', JWT_BEARER],
      ['client_assertion', live],
    ]);
  });

  it('does not send an expired assertion and names the file and the moment it expired, not the assertion', async () => {
    const expired = jwt({ iss: 'i', exp: NOW / 1000 - 5 });
    const auth = assertionFromFile({ path: '/var/run/t', read: () => expired, assertionType: JWT_BEARER, now: () => NOW });
    const err = await Promise.resolve()
      .then(() => auth(CRED, URL_))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenFetchError);
    expect((err as Error).message).toBe(
      'client assertion in /var/run/t expired at 2026-01-01T11:59:55.000Z: the projected token is not being rotated',
    );
    expect((err as Error).message).not.toContain(expired.split('.')[1]);
  });

  it('fails naming the file when it is missing or not a JWT', async () => {
    const missing = assertionFromFile({
      path: '/nope',
      read: () => {
        throw Object.assign(new Error('x'), { code: 'ENOENT' });
      },
      assertionType: JWT_BEARER,
      now: () => NOW,
    });
    await expect(Promise.resolve().then(() => missing(CRED, URL_))).rejects.toThrow('client assertion file /nope cannot be used (ENOENT)');
    const junk = assertionFromFile({ path: '/j', read: () => 'hello', assertionType: JWT_BEARER, now: () => NOW });
    await expect(Promise.resolve().then(() => junk(CRED, URL_))).rejects.toThrow(
      'client assertion file /j cannot be used (not a compact JWT)',
    );
  });

  it('summarizes issuer, subject, audience and expiry for check', () => {
    expect(summarizeAssertion(live)).toEqual({
      issuer: 'https://cluster',
      subject: 'system:serviceaccount:ns:app',
      audience: 'api',
      expiresAt: NOW / 1000 + 600,
    });
  });
});
