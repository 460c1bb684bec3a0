import { describe, expect, it } from 'vitest';
import { clientAssertionFile } from '../../src/token/client-auth/client-assertion-file.js';
import { clientSecretBasic } from '../../src/token/client-auth/client-secret-basic.js';
import { clientSecretPost } from '../../src/token/client-auth/client-secret-post.js';
import { tlsClientAuth } from '../../src/token/client-auth/tls-client-auth.js';
import { slotSeed, type CredentialParts } from '../../src/token/from-store/slot-seed.js';
import { clientCert, createCa } from '../helpers/certs.js';

const BASE: CredentialParts = {
  settings: {
    tokenUrl: 'https://idp.example/oauth2/token',
    issuerUrl: undefined,
    tokenScope: 'tickets.read',
    tokenParams: [],
    dpop: 'off',
  },
  method: clientSecretPost,
  clientId: 'ticket-client',
  material: { clientSecret: 'the-secret' },
  dpopKey: undefined,
  keyFile: undefined,
};

/** The slot seed of `options` over the base, which must be shared. */
function shared(options: Partial<CredentialParts> = {}) {
  const identity = slotSeed({ ...BASE, ...options });
  if (!identity.shared) throw new Error(`not shared: ${identity.reason}`);
  return identity.seed;
}

describe('a credential as the token store knows it', () => {
  it('is the same for two proxies with the same settings and secret, and derives its key from the secret', () => {
    expect(shared()).toEqual(shared());
    expect(Buffer.from(shared().keyMaterial).toString()).toBe('the-secret');
  });

  it('differs with the token URL (or the issuer naming it), client id, method, scope, token parameters or DPoP key, and never with the order of the parameters', () => {
    const base = shared().description;
    const others = [
      shared({ settings: { ...BASE.settings, tokenUrl: 'https://idp.example/other/token' } }),
      shared({ settings: { ...BASE.settings, tokenUrl: undefined, issuerUrl: 'https://idp.example/oauth2/token' } }),
      shared({ clientId: 'another-client' }),
      shared({ method: clientSecretBasic }),
      shared({ settings: { ...BASE.settings, tokenScope: 'tickets.write' } }),
      shared({ settings: { ...BASE.settings, tokenParams: [['audience', 'https://api']] } }),
      shared({ settings: { ...BASE.settings, dpop: 'on' }, dpopKey: { thumbprint: 'jkt-1', fromFile: true } }),
      shared({ settings: { ...BASE.settings, dpop: 'required' }, dpopKey: { thumbprint: 'jkt-1', fromFile: true } }),
    ].map((i) => i.description);
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
    const params = (list: [string, string][]) => shared({ settings: { ...BASE.settings, tokenParams: list } }).description;
    expect(
      params([
        ['resource', 'a'],
        ['audience', 'b'],
      ]),
    ).toBe(
      params([
        ['audience', 'b'],
        ['resource', 'a'],
      ]),
    );
    expect(params([['resource', 'a=b']])).not.toBe(
      params([
        ['resource', 'a'],
        ['b', ''],
      ]),
    );
  });

  it('holds no secret in its description', () => {
    expect(shared().description).not.toContain('the-secret');
  });

  it('is not shared with a DPoP key generated in this process, and says how to share it', () => {
    const identity = slotSeed({
      ...BASE,
      settings: { ...BASE.settings, dpop: 'on' },
      dpopKey: { thumbprint: 'jkt', fromFile: false },
    });
    expect(identity).toEqual({ shared: false, reason: expect.stringContaining('DPOP_KEY_FILE') });
  });

  it('needs TOKEN_STORE_KEY_FILE with a method that has no secret, and is then described by its certificate', async () => {
    const ca = await createCa();
    const cert = (await clientCert(ca, 'proxy-a')).cert;
    expect(slotSeed({ ...BASE, method: tlsClientAuth, material: { clientCertificate: cert } })).toEqual({
      shared: false,
      reason: expect.stringContaining('TOKEN_STORE_KEY_FILE'),
    });
    expect(slotSeed({ ...BASE, method: clientAssertionFile, material: {} })).toEqual({
      shared: false,
      reason: expect.stringContaining('TOKEN_STORE_KEY_FILE'),
    });
    const keyFile = Buffer.alloc(32, 7);
    const a = shared({ method: tlsClientAuth, material: { clientCertificate: cert }, keyFile });
    const b = shared({ method: tlsClientAuth, material: { clientCertificate: (await clientCert(ca, 'proxy-b')).cert }, keyFile });
    expect(a.keyMaterial).toEqual(keyFile);
    expect(a.description).toContain('x5t#S256');
    expect(a.description).not.toBe(b.description);
  });

  it('derives from the key file and the secret together when both are given, so a rotated secret is a new namespace still', () => {
    const keyFile = Buffer.alloc(32, 7);
    const one = shared({ keyFile });
    const rotated = shared({ keyFile, material: { clientSecret: 'the-new-secret' } });
    expect(Buffer.from(one.keyMaterial).subarray(4, 36)).toEqual(keyFile);
    expect(one.keyMaterial).not.toEqual(rotated.keyMaterial);
    expect(one.keyMaterial).not.toEqual(shared({ keyFile: Buffer.alloc(32, 8) }).keyMaterial);
  });
});
