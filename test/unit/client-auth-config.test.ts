import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config/config.js';
import { ConfigError } from '../../src/core/errors.js';

const BASE = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app' };
const pem = (type: string, opts: object): string =>
  generateKeyPairSync(type as 'rsa', opts as { modulusLength: number }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const RSA = pem('rsa', { modulusLength: 2048 });
const JWT = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('{"iss":"k8s"}').toString('base64url')}.c2ln`;
const FILES: Record<string, string> = {
  '/k/rsa.pem': RSA,
  '/k/small.pem': pem('rsa', { modulusLength: 1024 }),
  '/k/ec.pem': pem('ec', { namedCurve: 'P-384' }),
  '/k/k1.pem': pem('ec', { namedCurve: 'secp256k1' }),
  '/k/ed.pem': pem('ed25519', {}),
  '/t/token': `${JWT}\n`,
  '/t/junk': 'not a token',
};

function load(env: Record<string, string>): Config {
  return loadConfig({
    env: { ...BASE, ...env },
    readSecretFile: (p) => {
      const c = FILES[p];
      if (c === undefined) throw Object.assign(new Error('no'), { code: 'ENOENT' });
      return c;
    },
  });
}

function problems(env: Record<string, string>): string {
  try {
    load(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('private_key_jwt configuration', () => {
  it('accepts RSA, EC P-384 and Ed25519 keys with no secret', () => {
    for (const f of ['/k/rsa.pem', '/k/ec.pem', '/k/ed.pem']) {
      expect(load({ TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: f }).clientAssertionKeyFile).toBe(f);
    }
  });

  it('requires the key file', () => {
    expect(problems({ TOKEN_AUTH_METHOD: 'private_key_jwt' })).toContain('CLIENT_ASSERTION_KEY_FILE is required with TOKEN_AUTH_METHOD=private_key_jwt');
  });

  it('refuses a secret beside the key, naming both', () => {
    const msg = problems({ TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: '/k/rsa.pem', CLIENT_SECRET: 'shh-value' });
    expect(msg).toContain('CLIENT_SECRET and CLIENT_ASSERTION_KEY_FILE are both set');
    expect(msg).not.toContain('shh-value');
  });

  it('refuses small RSA keys, other curves, and an algorithm that does not fit the key, never printing the key', () => {
    expect(problems({ TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: '/k/small.pem' })).toContain('RSA key of 1024 bits');
    expect(problems({ TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: '/k/k1.pem' })).toContain('an EC key on secp256k1');
    const msg = problems({ TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: '/k/rsa.pem', CLIENT_ASSERTION_ALG: 'ES256' });
    expect(msg).toContain('CLIENT_ASSERTION_KEY_FILE holds a rsa key, which cannot sign ES256');
    expect(msg).not.toContain('PRIVATE KEY');
  });
});

describe('client_assertion_file configuration', () => {
  it('accepts a file holding a compact JWT, with the default assertion type', () => {
    const c = load({ TOKEN_AUTH_METHOD: 'client_assertion_file', CLIENT_ASSERTION_FILE: '/t/token' });
    expect(c.clientAssertionType).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
  });

  it('names the setting when the file is missing, not a JWT, or absent from the configuration', () => {
    expect(problems({ TOKEN_AUTH_METHOD: 'client_assertion_file', CLIENT_ASSERTION_FILE: '/t/none' })).toContain(
      'CLIENT_ASSERTION_FILE names a file that cannot be read (ENOENT): /t/none',
    );
    expect(problems({ TOKEN_AUTH_METHOD: 'client_assertion_file', CLIENT_ASSERTION_FILE: '/t/junk' })).toContain(
      'CLIENT_ASSERTION_FILE does not hold a compact JWT',
    );
    expect(problems({ TOKEN_AUTH_METHOD: 'client_assertion_file' })).toContain('CLIENT_ASSERTION_FILE is required');
  });

  it('refuses a secret or a key beside it, naming both settings', () => {
    const msg = problems({ TOKEN_AUTH_METHOD: 'client_assertion_file', CLIENT_ASSERTION_FILE: '/t/token', CLIENT_SECRET_FILE: '/s', CLIENT_ASSERTION_KEY_FILE: '/k/rsa.pem' });
    expect(msg).toContain('CLIENT_SECRET_FILE and CLIENT_ASSERTION_FILE are both set');
    expect(msg).toContain('CLIENT_ASSERTION_KEY_FILE and CLIENT_ASSERTION_FILE are both set');
  });
});

describe('TOKEN_PARAMS and the secret methods', () => {
  it('refuses a reserved field name', () => {
    expect(problems({ CLIENT_SECRET: 'x', TOKEN_PARAMS: 'client_secret=y' })).toContain('TOKEN_PARAMS may not set client_secret');
  });

  it('refuses assertion settings with a secret method, naming the method', () => {
    expect(problems({ CLIENT_SECRET: 'x', CLIENT_ASSERTION_FILE: '/t/token' })).toContain(
      'CLIENT_ASSERTION_FILE is set but TOKEN_AUTH_METHOD is client_secret_post',
    );
  });

  it('tls_client_auth needs a client certificate instead of a secret, and refuses a secret', () => {
    expect(problems({ TOKEN_AUTH_METHOD: 'tls_client_auth' })).toContain(
      'TOKEN_AUTH_METHOD=tls_client_auth needs TLS_CLIENT_CERT_FILE and TLS_CLIENT_KEY_FILE',
    );
    expect(problems({ TOKEN_AUTH_METHOD: 'tls_client_auth' })).not.toContain('CLIENT_SECRET_FILE (or CLIENT_SECRET) is required');
    expect(problems({ TOKEN_AUTH_METHOD: 'tls_client_auth', CLIENT_SECRET: 'x' })).toContain('CLIENT_SECRET is set with TOKEN_AUTH_METHOD=tls_client_auth');
  });
});
