import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { BAD_PEMS, PEMS } from '../helpers/dpop-keys.js';
import { filesOf, loadSettings } from '../helpers/load-settings.js';

const BASE = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'secret-value' };
const FILES = {
  '/k/p256.pem': PEMS['P-256'],
  '/k/p384.pem': PEMS['P-384'],
  '/k/ed.pem': PEMS.ed25519,
  '/k/rsa.pem': PEMS.rsa,
  '/k/small.pem': BAD_PEMS.rsa1024,
  '/k/k1.pem': BAD_PEMS.secp256k1,
  '/k/public.pem': BAD_PEMS.publicP256,
};

function load(env: Record<string, string>, file?: Record<string, unknown>) {
  return loadSettings({
    env: { ...BASE, ...env },
    file: file === undefined ? undefined : { path: '/etc/p.yaml', values: file },
    readFile: filesOf(FILES),
  });
}

function problems(env: Record<string, string>, file?: Record<string, unknown>): string[] {
  try {
    load(env, file);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error('expected a ConfigError, the configuration loaded');
}

describe('the DPoP settings', () => {
  it('are off by default, with no key', () => {
    const { config, checked } = load({});
    expect(config.dpop).toBe('off');
    expect(checked.dpop).toEqual({ mode: 'off' });
  });

  it('generate a P-256 key kept in memory when no key file is named', () => {
    const { checked } = load({ DPOP: 'on' });
    expect(checked.dpop.mode).toBe('on');
    expect(checked.dpop.key?.alg).toBe('ES256');
    expect(checked.dpop.key?.jwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(checked.dpop.keyText).toBeUndefined();
  });

  it('generate the key type DPOP_ALG needs when no key file is named', () => {
    expect(load({ DPOP: 'required', DPOP_ALG: 'EdDSA' }).checked.dpop.key?.jwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
    expect(load({ DPOP: 'on', DPOP_ALG: 'ES384' }).checked.dpop.key?.jwk).toMatchObject({ crv: 'P-384' });
  });

  it.each([
    ['/k/p256.pem', undefined, 'ES256'],
    ['/k/p384.pem', undefined, 'ES384'],
    ['/k/ed.pem', undefined, 'EdDSA'],
    ['/k/rsa.pem', undefined, 'PS256'],
    ['/k/rsa.pem', 'RS256', 'RS256'],
  ] as const)('read %s (DPOP_ALG %s) as a key signing %s, keeping the text to watch from', (path, alg, want) => {
    const { checked } = load({ DPOP: 'on', DPOP_KEY_FILE: path, ...(alg !== undefined ? { DPOP_ALG: alg } : {}) });
    expect(checked.dpop.key?.alg).toBe(want);
    expect(checked.dpop.keyText).toBe(FILES[path]);
  });

  it.each([
    ['/k/small.pem', 'DPOP_KEY_FILE holds an RSA key of 1024 bits; at least 2048 are required: /k/small.pem'],
    [
      '/k/k1.pem',
      'DPOP_KEY_FILE holds an EC key on secp256k1; use EC P-256 (ES256), P-384 (ES384), Ed25519 (EdDSA) or RSA of 2048 bits or more (PS256): /k/k1.pem',
    ],
    ['/k/public.pem', 'DPOP_KEY_FILE holds a public key or certificate; the proofs need the private key: /k/public.pem'],
    ['/k/missing.pem', 'DPOP_KEY_FILE'],
  ])('refuse the key file %s, naming DPOP_KEY_FILE', (path, message) => {
    const found = problems({ DPOP: 'on', DPOP_KEY_FILE: path });
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(message);
    expect(found[0]).not.toContain('PRIVATE KEY');
  });

  it('refuse an algorithm the key cannot sign, naming the setting', () => {
    expect(problems({ DPOP: 'on', DPOP_KEY_FILE: '/k/ed.pem', DPOP_ALG: 'ES256' })).toEqual([
      'DPOP_KEY_FILE holds an Ed25519 key, which cannot sign ES256 (use EdDSA): /k/ed.pem',
    ]);
  });

  it('refuse DPOP_KEY_FILE and DPOP_ALG while DPOP is off, where they would do nothing', () => {
    expect(problems({ DPOP_KEY_FILE: '/k/p256.pem', DPOP_ALG: 'ES256' })).toEqual([
      'DPOP_KEY_FILE is set but DPOP is off: set DPOP=on (or required) to send DPoP proofs, or remove it',
      'DPOP_ALG is set but DPOP is off: set DPOP=on (or required) to send DPoP proofs, or remove it',
    ]);
    expect(problems({}, { dpop: 'off', dpopKeyFile: '/k/p256.pem' })).toEqual([
      'dpopKeyFile in /etc/p.yaml (DPOP_KEY_FILE) is set but DPOP is off: set DPOP=on (or required) to send DPoP proofs, or remove it',
    ]);
  });

  it('refuse an unknown mode or algorithm once, with no second message about it', () => {
    const found = problems({ DPOP: 'yes', DPOP_ALG: 'HS256' });
    expect(found).toHaveLength(2);
    expect(found[0]).toContain('DPOP must be one of off, on, required');
    expect(found[1]).toContain('DPOP_ALG must be one of');
  });

  it('are read from the YAML file too', () => {
    const { checked } = load({}, { dpop: 'required', dpopKeyFile: '/k/p384.pem' });
    expect(checked.dpop).toMatchObject({ mode: 'required', key: { alg: 'ES384' } });
  });
});
