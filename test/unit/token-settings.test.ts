import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SETTINGS, type Config } from '../../src/config/config.js';
import { ConfigError } from '../../src/core/errors.js';
import { ASSERTION_ALGS } from '../../src/token/client-auth/assertion-key.js';
import { JWT_BEARER } from '../../src/token/client-auth/index.js';
import { trimSecret } from '../../src/token/secret-file.js';
import type { TokenStartup } from '../../src/token/client-auth/index.js';
import { filesOf, loadSettings } from '../helpers/load-settings.js';

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

const FILE = '/etc/ticket-auth-proxy.yaml';
const SECRET_PATH = '/var/run/secrets/ticket/client-secret';

function loadBoth(
  env: Record<string, string>,
  file?: Record<string, unknown>,
  files: Record<string, string> = {},
): { config: Config; token: TokenStartup } {
  const { config, checked } = loadSettings({
    env: { ...BASE, ...env },
    file: file === undefined ? undefined : { path: FILE, values: file },
    readFile: filesOf({ ...FILES, ...files }),
  });
  return { config, token: checked.token };
}

function problems(env: Record<string, string>, file?: Record<string, unknown>, files?: Record<string, string>): string {
  try {
    loadBoth(env, file, files);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

const MINIMAL = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'secret-value' };

/** The ConfigError of loading with exactly `env`; fails the test when it loads. */
function configError(
  env: Record<string, string | undefined>,
  file?: Record<string, unknown>,
  files: Record<string, string> = {},
): ConfigError {
  try {
    loadSettings({ env, file: file === undefined ? undefined : { path: FILE, values: file }, readFile: filesOf(files) });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, the configuration loaded');
}

function loadExact(env: Record<string, string>, files: Record<string, string> = {}): { config: Config; token: TokenStartup } {
  const { config, checked } = loadSettings({ env, readFile: filesOf(files) });
  return { config, token: checked.token };
}

describe('the client secret', () => {
  it('reads the secret from CLIENT_SECRET_FILE, trimmed', () => {
    const { config, token } = loadExact(
      { BASE_URL: 'https://gw', CLIENT_ID: 'app', CLIENT_SECRET_FILE: SECRET_PATH },
      {
        [SECRET_PATH]: '  s3cr3t value \r\n\n',
      },
    );
    expect(token.clientSecret).toBe('s3cr3t value');
    expect(config.clientSecretFile).toBe(SECRET_PATH);
  });

  it('trims CLIENT_SECRET too', () => {
    expect(loadExact({ ...MINIMAL, CLIENT_SECRET: ' secret-value\n' }).token.clientSecret).toBe('secret-value');
    expect(trimSecret('\tx y\n')).toBe('x y');
  });

  it('refuses CLIENT_SECRET and CLIENT_SECRET_FILE together, saying where each came from', () => {
    const err = configError({ ...MINIMAL, CLIENT_SECRET_FILE: SECRET_PATH }, undefined, { [SECRET_PATH]: 'x' });
    expect(err.problems).toEqual([
      'CLIENT_SECRET and CLIENT_SECRET_FILE are both set (CLIENT_SECRET from the environment, CLIENT_SECRET_FILE from the environment): set only one (the file is preferred)',
    ]);
    const mixed = configError({ ...MINIMAL }, { clientSecretFile: SECRET_PATH }, { [SECRET_PATH]: 'x' });
    expect(mixed.problems).toEqual([
      `CLIENT_SECRET and CLIENT_SECRET_FILE are both set (CLIENT_SECRET from the environment, CLIENT_SECRET_FILE from clientSecretFile in ${FILE}): set only one (the file is preferred)`,
    ]);
    expect(mixed.message).not.toContain('secret-value');
  });

  it('says where each came from in every conflict of two settings', () => {
    const msg = problems(
      { TOKEN_AUTH_METHOD: 'client_assertion_file', CLIENT_ASSERTION_FILE: '/t/token' },
      { clientSecretFile: '/s', clientAssertionKeyFile: '/k/rsa.pem' },
    );
    expect(msg).toContain(
      `CLIENT_SECRET_FILE and CLIENT_ASSERTION_FILE are both set (CLIENT_SECRET_FILE from clientSecretFile in ${FILE}, CLIENT_ASSERTION_FILE from the environment)`,
    );
    expect(msg).toContain(
      `CLIENT_ASSERTION_KEY_FILE and CLIENT_ASSERTION_FILE are both set (CLIENT_ASSERTION_KEY_FILE from clientAssertionKeyFile in ${FILE}, CLIENT_ASSERTION_FILE from the environment)`,
    );
  });

  it('refuses an unreadable secret file, naming the file and the reason', () => {
    const err = configError({ BASE_URL: 'https://gw', CLIENT_ID: 'app', CLIENT_SECRET_FILE: SECRET_PATH });
    expect(err.problems).toEqual([`CLIENT_SECRET_FILE names a file that cannot be read (ENOENT): ${SECRET_PATH}`]);
  });

  it('refuses an empty secret file', () => {
    const err = configError({ BASE_URL: 'https://gw', CLIENT_ID: 'app', CLIENT_SECRET_FILE: SECRET_PATH }, undefined, {
      [SECRET_PATH]: ' \n',
    });
    expect(err.problems).toEqual([`CLIENT_SECRET_FILE names a file that is empty: ${SECRET_PATH}`]);
  });

  it('requires CLIENT_ID and a secret without pass-through credentials', () => {
    expect(configError({ BASE_URL: 'https://gw' }).problems).toEqual([
      'CLIENT_ID is required: the client identifier from the workspace settings',
      'CLIENT_SECRET_FILE (or CLIENT_SECRET) is required: the client secret from the workspace settings',
    ]);
  });

  it('says a secret the file gives empty is required, and one it gives refused is refused, not also missing', () => {
    const required = 'CLIENT_SECRET_FILE (or CLIENT_SECRET) is required: the client secret from the workspace settings';
    expect(configError({ BASE_URL: 'https://gw', CLIENT_ID: 'app' }, { clientSecret: '' }).problems).toEqual([required]);
    expect(configError({ BASE_URL: 'https://gw', CLIENT_ID: 'app' }, { clientSecret: ['a'] }).problems).toEqual([
      `clientSecret in ${FILE} (CLIENT_SECRET) must be a string`,
    ]);
  });

  it('makes the configured credentials optional with PASSTHROUGH_BASIC, but not half of them', () => {
    const { config } = loadExact({ BASE_URL: 'https://gw', PASSTHROUGH_BASIC: 'true' });
    expect(config).toMatchObject({ passthroughBasic: true, clientId: undefined, clientSecret: undefined });
    expect(configError({ BASE_URL: 'https://gw', PASSTHROUGH_BASIC: 'true', CLIENT_ID: 'app' }).problems).toEqual([
      'CLIENT_SECRET_FILE (or CLIENT_SECRET) is required: the client secret from the workspace settings',
    ]);
  });
});

describe('client_secret_jwt configuration', () => {
  const JWT_METHOD = { TOKEN_AUTH_METHOD: 'client_secret_jwt' };

  it('takes the secret as the other secret methods do, from the file, trimmed', () => {
    const { config, token } = loadBoth({ ...JWT_METHOD, CLIENT_SECRET_FILE: SECRET_PATH }, undefined, { [SECRET_PATH]: 'sign-with-me\n' });
    expect(config.tokenAuthMethod).toBe('client_secret_jwt');
    expect(token.clientSecret).toBe('sign-with-me');
  });

  it('requires CLIENT_ID and a secret, unless pass-through credentials stand in', () => {
    expect(configError({ BASE_URL: 'https://gw', ...JWT_METHOD }).problems).toEqual([
      'CLIENT_ID is required: the client identifier from the workspace settings',
      'CLIENT_SECRET_FILE (or CLIENT_SECRET) is required: the client secret from the workspace settings',
    ]);
    expect(loadExact({ BASE_URL: 'https://gw', PASSTHROUGH_BASIC: 'true', ...JWT_METHOD }).config.tokenAuthMethod).toBe(
      'client_secret_jwt',
    );
  });

  it('refuses the assertion fields in TOKEN_PARAMS and a key or assertion file beside the secret', () => {
    const message = problems({ ...JWT_METHOD, CLIENT_SECRET: 'x', TOKEN_PARAMS: 'client_assertion=y&client_assertion_type=z' });
    expect(message).toContain('TOKEN_PARAMS may not set client_assertion:');
    expect(message).toContain('TOKEN_PARAMS may not set client_assertion_type');
    expect(problems({ ...JWT_METHOD, CLIENT_SECRET: 'x', CLIENT_ASSERTION_KEY_FILE: '/k/rsa.pem' })).toContain(
      'CLIENT_ASSERTION_KEY_FILE is set but TOKEN_AUTH_METHOD is client_secret_jwt',
    );
  });
});

describe('private_key_jwt configuration', () => {
  it('accepts RSA, EC P-384 and Ed25519 keys with no secret, handing on the key it read', () => {
    for (const [f, alg] of [
      ['/k/rsa.pem', 'RS256'],
      ['/k/ec.pem', 'ES384'],
      ['/k/ed.pem', 'EdDSA'],
    ] as const) {
      const { config, token } = loadBoth({ TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: f });
      expect(config.clientAssertionKeyFile).toBe(f);
      expect(token.assertionKey?.text).toBe(FILES[f]);
      expect(token.assertionKey?.key.alg).toBe(alg);
    }
  });

  it('requires the key file', () => {
    expect(problems({ TOKEN_AUTH_METHOD: 'private_key_jwt' })).toContain(
      'CLIENT_ASSERTION_KEY_FILE is required with TOKEN_AUTH_METHOD=private_key_jwt',
    );
  });

  it('refuses a secret beside the key, naming both', () => {
    const msg = problems({ TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: '/k/rsa.pem', CLIENT_SECRET: 'shh-value' });
    expect(msg).toContain(
      'CLIENT_SECRET and CLIENT_ASSERTION_KEY_FILE are both set (CLIENT_SECRET from the environment, CLIENT_ASSERTION_KEY_FILE from the environment)',
    );
    expect(msg).not.toContain('shh-value');
  });

  it('names only the secret when it is set without the key, and still asks for the key', () => {
    const msg = problems({ TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_SECRET_FILE: '/s/secret' });
    expect(msg).toContain(
      'CLIENT_SECRET_FILE is set (CLIENT_SECRET_FILE from the environment): TOKEN_AUTH_METHOD=private_key_jwt signs with the key and sends no secret',
    );
    expect(msg).toContain('CLIENT_ASSERTION_KEY_FILE is required with TOKEN_AUTH_METHOD=private_key_jwt');
    expect(msg).not.toContain('unset');
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
    const { config, token } = loadBoth({ TOKEN_AUTH_METHOD: 'client_assertion_file', CLIENT_ASSERTION_FILE: '/t/token' });
    expect(config.clientAssertionType).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    expect(token.assertion).toBe(JWT);
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
    const msg = problems({
      TOKEN_AUTH_METHOD: 'client_assertion_file',
      CLIENT_ASSERTION_FILE: '/t/token',
      CLIENT_SECRET_FILE: '/s',
      CLIENT_ASSERTION_KEY_FILE: '/k/rsa.pem',
    });
    expect(msg).toContain('CLIENT_SECRET_FILE and CLIENT_ASSERTION_FILE are both set');
    expect(msg).toContain('CLIENT_ASSERTION_KEY_FILE and CLIENT_ASSERTION_FILE are both set');
  });
});

describe('TOKEN_PARAMS and the secret methods', () => {
  it('refuses a reserved field name', () => {
    expect(problems({ CLIENT_SECRET: 'x', TOKEN_PARAMS: 'client_secret=y' })).toContain('TOKEN_PARAMS may not set client_secret');
  });

  it('refuses every field the proxy sets itself, naming the setting', () => {
    for (const name of ['grant_type', 'client_id', 'client_secret', 'scope', 'client_assertion', 'client_assertion_type']) {
      expect(problems({ CLIENT_SECRET: 'x', TOKEN_PARAMS: `${name}=x` })).toContain(
        `TOKEN_PARAMS may not set ${name}: the proxy sets it (use TOKEN_SCOPE for scope)`,
      );
    }
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
    expect(problems({ TOKEN_AUTH_METHOD: 'tls_client_auth', CLIENT_SECRET: 'x' })).toContain(
      'CLIENT_SECRET is set with TOKEN_AUTH_METHOD=tls_client_auth',
    );
  });
});

describe('the settings table and the token layer agree', () => {
  it('lists the algorithms a key can sign with, and the JWT bearer assertion type by default', () => {
    expect(SETTINGS.find((s) => s.env === 'CLIENT_ASSERTION_ALG')!.kind).toEqual({ type: 'enum', values: ASSERTION_ALGS });
    expect(SETTINGS.find((s) => s.env === 'CLIENT_ASSERTION_TYPE')!.default).toBe(JWT_BEARER);
  });
});

describe('TOKEN_SCOPE', () => {
  const warningsOf = (env: Record<string, string>, file?: Record<string, unknown>) =>
    loadSettings({
      env: { ...BASE, CLIENT_SECRET: 's', ...env },
      file: file === undefined ? undefined : { path: FILE, values: file },
      readFile: filesOf({}),
    }).warnings;

  it('warns of a comma, which RFC 6749 §3.3 does not separate scopes with, naming the space-separated form', () => {
    expect(warningsOf({ TOKEN_SCOPE: 'tickets.read,tickets.write' })).toEqual([
      {
        setting: 'TOKEN_SCOPE',
        message:
          'TOKEN_SCOPE holds a comma (got "tickets.read,tickets.write"): scopes are separated by spaces (RFC 6749 §3.3), so the ' +
          'identity provider reads "tickets.read,tickets.write" as one scope; for several, write TOKEN_SCOPE="tickets.read tickets.write"',
      },
    ]);
    expect(warningsOf({}, { tokenScope: 'a, b ,c' })[0]!.message).toMatch(
      new RegExp(`^tokenScope in ${FILE} \\(TOKEN_SCOPE\\) holds a comma .*write TOKEN_SCOPE="a b c"$`),
    );
  });

  it('takes space-separated scopes, and no scope, without a word', () => {
    expect(warningsOf({ TOKEN_SCOPE: 'tickets.read tickets.write' })).toEqual([]);
    expect(warningsOf({})).toEqual([]);
  });
});
