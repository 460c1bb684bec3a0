import { createHash, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TOKEN_AUTH_METHODS, type Config } from '../../src/config/config.js';
import { clientAssertionFile } from '../../src/token/client-auth/client-assertion-file.js';
import { clientSecretBasic } from '../../src/token/client-auth/client-secret-basic.js';
import { clientSecretJwt } from '../../src/token/client-auth/client-secret-jwt.js';
import { clientSecretPost } from '../../src/token/client-auth/client-secret-post.js';
import { AUTH_METHODS, authMethod, passthroughClientAuth, type AuthMethod } from '../../src/token/client-auth/index.js';
import { privateKeyJwt } from '../../src/token/client-auth/private-key-jwt.js';
import { tlsClientAuth } from '../../src/token/client-auth/tls-client-auth.js';
import { clientCert, createCa } from '../helpers/certs.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const SRC = resolve(import.meta.dirname, '../../src');
const CRED = { clientId: 'client-1', clientSecret: 's3cret' };
const URL_ = 'https://idp.example/token';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('the table of client authentication methods', () => {
  it('has one record for each name TOKEN_AUTH_METHOD accepts, in the same order', () => {
    expect(AUTH_METHODS.map((m) => m.name)).toEqual([...TOKEN_AUTH_METHODS]);
    for (const name of TOKEN_AUTH_METHODS) expect(authMethod(name).name).toBe(name);
  });

  it('says which methods the client secret proves', () => {
    expect(AUTH_METHODS.filter((m) => m.usesSecret).map((m) => m.name)).toEqual([
      'client_secret_post',
      'client_secret_basic',
      'client_secret_jwt',
    ]);
  });

  it('writes each name in two files of src/ outside the mock: the record, and the list of names the settings syntax needs', () => {
    const files = sourceFiles(SRC).filter((f) => !relative(SRC, f).startsWith('mock/'));
    const texts = files.map((f) => [relative(SRC, f), readFileSync(f, 'utf8')] as const);
    for (const name of TOKEN_AUTH_METHODS) {
      const record = `token/client-auth/${name.replaceAll('_', '-')}.ts`;
      const writing = texts.filter(([, text]) => new RegExp(`\\b${name}\\b`).test(text)).map(([file]) => file);
      expect(writing.sort(), name).toEqual(['config/config.ts', record].sort());
    }
  });

  it('lets no setting belong to two methods', () => {
    const owned = AUTH_METHODS.flatMap((m) => [...(m.proofSetting === undefined ? [] : [m.proofSetting]), ...(m.proofOptions ?? [])]);
    expect(new Set(owned).size).toBe(owned.length);
  });
});

describe('pass-through credentials', () => {
  const deps = { clock: new FakeClock(), log: new FakeLog() };
  const passthrough = (method: AuthMethod) => passthroughClientAuth({ tokenAuthMethod: method.name } as Config, deps);

  it('are sent the configured method’s way when the secret proves it', async () => {
    expect((await passthrough(clientSecretBasic).authenticate(CRED, URL_)).headers.authorization).toMatch(/^Basic /);
    expect(Object.fromEntries((await passthrough(clientSecretJwt).authenticate(CRED, URL_)).form)).toHaveProperty('client_assertion');
    expect(await passthrough(clientSecretPost).authenticate(CRED, URL_)).toMatchObject({
      form: [
        ['client_id', 'client-1'],
        ['client_secret', 's3cret'],
      ],
    });
  });

  it('are sent in the form body when the configured method has no secret', async () => {
    for (const method of [privateKeyJwt, tlsClientAuth, clientAssertionFile]) {
      const auth = passthrough(method);
      expect(await auth.authenticate(CRED, URL_)).toEqual({
        headers: {},
        form: [
          ['client_id', 'client-1'],
          ['client_secret', 's3cret'],
        ],
      });
      expect(auth.explainRefusal(CRED).credentials).toContain('CLIENT_SECRET_FILE');
    }
  });
});

describe('how a refusal is explained', () => {
  it('names the settings each method’s proof is made of, never the secret', () => {
    const config = { clientAssertionFile: '/var/run/secrets/tokens/token' } as Config;
    const explained = Object.fromEntries(AUTH_METHODS.map((m) => [m.name, m.explainRefusal(CRED, config).credentials]));
    expect(explained).toMatchObject({
      client_secret_post: 'CLIENT_ID and the secret (CLIENT_SECRET_FILE or CLIENT_SECRET)',
      client_secret_basic: 'CLIENT_ID and the secret (CLIENT_SECRET_FILE or CLIENT_SECRET)',
      client_secret_jwt: expect.stringContaining('must allow client_secret_jwt for this client'),
      private_key_jwt: expect.stringContaining('CLIENT_ASSERTION_KEY_FILE'),
      tls_client_auth: expect.stringContaining('TLS_CLIENT_CERT_FILE'),
      client_assertion_file: expect.stringContaining('the assertion in /var/run/secrets/tokens/token'),
    });
    expect(JSON.stringify(explained)).not.toContain('s3cret');
  });
});

describe('what a shared token store derives from a method', () => {
  it('derives the key from the client secret for the secret methods, and adds nothing to the description', () => {
    for (const method of [clientSecretPost, clientSecretBasic, clientSecretJwt]) {
      const material = method.storeKeyMaterial({ clientSecret: 'gehé+im' });
      expect(material).toEqual({ from: 'client_secret', secret: Buffer.from('gehé+im', 'utf8') });
      expect(method.storeDescription({ clientSecret: 'gehé+im' })).toEqual([]);
      expect(() => method.storeKeyMaterial({})).toThrow(/client secret; none was given/);
    }
  });

  it('derives the key from the private key itself for private_key_jwt, whichever PEM form its file takes', () => {
    // PKCS #8 generated, PKCS #1 read back: one key.
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const fromPkcs8 = privateKeyJwt.storeKeyMaterial({ assertionKey: privateKey });
    expect(fromPkcs8.from).toBe('private_key');
    const viaPkcs1 = privateKeyJwt.storeKeyMaterial({
      assertionKey: createPrivateKey(privateKey.export({ type: 'pkcs1', format: 'pem' })),
    });
    expect(viaPkcs1).toEqual(fromPkcs8);
    expect(privateKeyJwt.storeKeyMaterial({ assertionKey: other })).not.toEqual(fromPkcs8);
    expect(privateKeyJwt.storeDescription({ assertionKey: privateKey })).toEqual([]);
    expect(() => privateKeyJwt.storeKeyMaterial({})).toThrow(/private key; none was given/);
  });

  it('describes tls_client_auth by its client certificate’s SHA-256 thumbprint (x5t#S256), and derives no key from it', async () => {
    const ca = await createCa();
    const [a, b] = [await clientCert(ca, 'proxy-a'), await clientCert(ca, 'proxy-b')];
    // RFC 8705 §3.1: base64url of the SHA-256 of the DER; the first certificate of a chain is the client's.
    const der = (certPem: string) => Buffer.from(certPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    const thumbprint = createHash('sha256').update(der(a.cert)).digest('base64url');
    expect(tlsClientAuth.storeDescription({ clientCertificate: a.cert + ca.cert })).toEqual([['x5t#S256', thumbprint]]);
    expect(tlsClientAuth.storeDescription({ clientCertificate: b.cert })).not.toEqual([['x5t#S256', thumbprint]]);
    expect(() => tlsClientAuth.storeDescription({})).toThrow(/client certificate; none was given/);
    expect(tlsClientAuth.storeKeyMaterial({ clientCertificate: a.cert })).toEqual({ from: 'key_file' });
  });

  it('derives no key for client_assertion_file, whose assertion is another party’s', () => {
    expect(clientAssertionFile.storeKeyMaterial({})).toEqual({ from: 'key_file' });
    expect(clientAssertionFile.storeDescription({})).toEqual([]);
  });
});
