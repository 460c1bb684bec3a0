/**
 * The mock's strict DPoP check, itself tested: proofs made by the proxy's proof maker and by jose
 * (an independent implementation) pass when right, and each way a proof can be wrong is refused.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { SignJWT, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import type { DpopAlg } from '../../src/config/config.js';
import { createDpopVerifier, dpopChallenge, type DpopRequest, type DpopVerdict } from '../../src/mock/dpop-verifier.js';
import { loadDpopKey } from '../../src/token/dpop/dpop-key.js';
import { accessTokenHash, createDpopProver } from '../../src/token/dpop/proof.js';
import { PEMS } from '../helpers/dpop-keys.js';
import { FakeClock } from '../helpers/fake-clock.js';

const URL_ = 'https://gw.example.com/gw/api/v1/tickets';
const TOKEN = 'the-access-token';
const NOW = Date.UTC(2026, 0, 1, 12);

const KEYS: [keyof typeof PEMS, DpopAlg][] = [
  ['P-256', 'ES256'],
  ['P-384', 'ES384'],
  ['ed25519', 'EdDSA'],
  ['rsa', 'PS256'],
  ['rsa', 'RS256'],
];

interface Claims {
  htm?: string;
  htu?: string;
  iat?: number;
  jti?: string;
  token?: string;
  nonce?: string;
}

/** A proof from the proxy's proof maker. */
function makerProof(type: keyof typeof PEMS, alg: DpopAlg, c: Claims = {}): string {
  const clock = new FakeClock(c.iat !== undefined ? c.iat * 1000 : NOW);
  const prover = createDpopProver({ key: loadDpopKey(PEMS[type], alg), clock, ...(c.jti !== undefined ? { jti: () => c.jti! } : {}) });
  return prover.proof(c.htm ?? 'GET', c.htu ?? URL_, { token: c.token, nonce: c.nonce });
}

/** A proof from jose, with any header the test wants. */
async function joseProof(type: keyof typeof PEMS, alg: string, c: Claims = {}, header: Record<string, unknown> = {}): Promise<string> {
  const jwk = createPublicKey(PEMS[type]).export({ format: 'jwk' }) as JWK;
  const claims: Record<string, unknown> = { jti: c.jti ?? randomUUID(), htm: c.htm ?? 'GET', htu: c.htu ?? URL_, iat: c.iat ?? NOW / 1000 };
  if (c.token !== undefined) claims.ath = accessTokenHash(c.token);
  if (c.nonce !== undefined) claims.nonce = c.nonce;
  return new SignJWT(claims).setProtectedHeader({ typ: 'dpop+jwt', alg, jwk, ...header }).sign(createPrivateKey(PEMS[type]));
}

function request(proofs: string[], extra: Partial<DpopRequest> = {}): DpopRequest {
  return { rawHeaders: ['Host', 'gw.example.com', ...proofs.flatMap((p) => ['DPoP', p])], method: 'GET', url: URL_, ...extra };
}

function verifier(requireNonce = false) {
  return createDpopVerifier({ now: () => NOW, requireNonce });
}

function refused(verdict: DpopVerdict, error: string, description: string | RegExp): void {
  expect(verdict.ok).toBe(false);
  if (verdict.ok) return;
  expect(verdict.error).toBe(error);
  expect(verdict.description).toMatch(description);
}

const tamper = (proof: string, claims: Record<string, unknown>): string => {
  const [h, p, s] = proof.split('.');
  const payload = { ...JSON.parse(Buffer.from(p!, 'base64url').toString()), ...claims };
  return `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`;
};

describe.each([
  ["the proxy's proof maker", async (type: keyof typeof PEMS, alg: DpopAlg, c?: Claims) => makerProof(type, alg, c)],
  ['jose', (type: keyof typeof PEMS, alg: DpopAlg, c?: Claims) => joseProof(type, alg, c)],
])('the strict DPoP check, with proofs from %s', (_name, make) => {
  it.each(KEYS)('passes a good proof of a %s key (%s) and gives its thumbprint', async (type, alg) => {
    const v = verifier();
    const verdict = await v.verify(request([await make(type, alg, { token: TOKEN })], { accessToken: TOKEN }));
    const thumbprint = loadDpopKey(PEMS[type]).thumbprint;
    expect(verdict).toEqual({ ok: true, jkt: thumbprint });
    expect((await v.verify(request([await make(type, alg, { token: TOKEN })], { accessToken: TOKEN, boundJkt: thumbprint }))).ok).toBe(
      true,
    );
  });

  it('compares htu as RFC 9449 section 4.3 says: normalised, query and fragment ignored', async () => {
    const v = verifier();
    const proof = await make('P-256', 'ES256', { htu: 'HTTPS://GW.example.com:443/gw/api/v1/%7eu/%c3%a9' });
    expect((await v.verify(request([proof], { url: 'https://gw.example.com/gw/api/v1/~u/%C3%A9?state=open' }))).ok).toBe(true);
  });

  it('compares the path as the request line carries it: a raw character and its percent-encoding are two paths', async () => {
    const raw = 'https://gw.example.com/gw/api/v1/t/a^b{c}"d"';
    const encoded = 'https://gw.example.com/gw/api/v1/t/a%5Eb%7Bc%7D%22d%22';
    const v = verifier();
    expect((await v.verify(request([await make('P-256', 'ES256', { htu: raw })], { url: raw }))).ok).toBe(true);
    expect((await v.verify(request([await make('P-256', 'ES256', { htu: encoded })], { url: encoded }))).ok).toBe(true);
    refused(await v.verify(request([await make('P-256', 'ES256', { htu: encoded })], { url: raw })), 'invalid_dpop_proof', /^htu /);
    refused(await v.verify(request([await make('P-256', 'ES256', { htu: raw })], { url: encoded })), 'invalid_dpop_proof', /^htu /);
    // An empty path is "/" (RFC 3986 §6.2.3).
    expect(
      (await v.verify(request([await make('P-256', 'ES256', { htu: 'https://gw.example.com' })], { url: 'https://gw.example.com/' }))).ok,
    ).toBe(true);
  });

  it('refuses a tampered proof', async () => {
    refused(
      await verifier().verify(request([tamper(await make('P-256', 'ES256'), { htm: 'DELETE' })], { method: 'DELETE' })),
      'invalid_dpop_proof',
      /signature/,
    );
  });

  it('refuses a jti used before', async () => {
    const v = verifier();
    const proof = await make('ed25519', 'EdDSA');
    expect((await v.verify(request([proof]))).ok).toBe(true);
    refused(await v.verify(request([proof])), 'invalid_dpop_proof', 'jti was used before');
    const sameJti = await make('P-256', 'ES256', { jti: 'fixed' });
    expect((await v.verify(request([sameJti]))).ok).toBe(true);
    refused(await v.verify(request([await make('P-256', 'ES256', { jti: 'fixed' })])), 'invalid_dpop_proof', 'jti was used before');
  });

  it('refuses a wrong htu: another path, host, port or scheme', async () => {
    for (const htu of [
      'https://gw.example.com/gw/api/v1/other',
      'https://gw2.example.com/gw/api/v1/tickets',
      'https://gw.example.com:8443/gw/api/v1/tickets',
      'http://gw.example.com/gw/api/v1/tickets',
      'https://gw.example.com/api/v1/tickets',
    ]) {
      refused(await verifier().verify(request([await make('P-256', 'ES256', { htu })])), 'invalid_dpop_proof', /^htu /);
    }
  });

  it('refuses an htu carrying a query or a fragment, which a client leaves out', async () => {
    for (const htu of [`${URL_}?state=open`, `${URL_}#x`, `${URL_}?`]) {
      refused(
        await verifier().verify(request([await make('P-256', 'ES256', { htu })], { url: `${URL_}?state=open` })),
        'invalid_dpop_proof',
        /^htu must be without query and fragment/,
      );
    }
  });

  it('refuses a wrong htm', async () => {
    refused(
      await verifier().verify(request([await make('P-256', 'ES256', { htm: 'POST' })])),
      'invalid_dpop_proof',
      /^htm "POST" is not the request's method GET/,
    );
    refused(await verifier().verify(request([await make('P-256', 'ES256', { htm: 'get' })])), 'invalid_dpop_proof', /^htm /);
  });

  it('refuses an iat more than a minute old or ahead, and passes one within the minute', async () => {
    refused(await verifier().verify(request([await make('P-256', 'ES256', { iat: NOW / 1000 - 61 })])), 'invalid_dpop_proof', /iat/);
    refused(await verifier().verify(request([await make('P-256', 'ES256', { iat: NOW / 1000 + 61 })])), 'invalid_dpop_proof', /iat/);
    expect((await verifier().verify(request([await make('P-256', 'ES256', { iat: NOW / 1000 - 59 })]))).ok).toBe(true);
  });

  it('refuses a missing or wrong ath when a token is presented', async () => {
    refused(
      await verifier().verify(request([await make('P-256', 'ES256')], { accessToken: TOKEN })),
      'invalid_dpop_proof',
      'ath is missing',
    );
    refused(
      await verifier().verify(request([await make('P-256', 'ES256', { token: 'another-token' })], { accessToken: TOKEN })),
      'invalid_dpop_proof',
      'ath is not the hash of the presented token',
    );
  });

  it('refuses a proof whose key is not the one the token is bound to (cnf.jkt)', async () => {
    const other = loadDpopKey(PEMS.ed25519).thumbprint;
    refused(
      await verifier().verify(request([await make('P-256', 'ES256', { token: TOKEN })], { accessToken: TOKEN, boundJkt: other })),
      'invalid_token',
      /cnf\.jkt/,
    );
  });

  it('refuses a missing or a double DPoP header', async () => {
    refused(await verifier().verify(request([])), 'invalid_dpop_proof', 'no DPoP header');
    const v = verifier();
    refused(
      await v.verify(request([await make('P-256', 'ES256'), await make('P-256', 'ES256')])),
      'invalid_dpop_proof',
      '2 DPoP headers; exactly one is allowed',
    );
    const joined = `${await make('P-256', 'ES256')}, ${await make('P-256', 'ES256')}`;
    refused(await v.verify(request([joined])), 'invalid_dpop_proof', /not a compact JWS/);
  });

  it('demands the current nonce when told to, then passes a proof carrying it', async () => {
    const v = verifier(true);
    const first = await v.verify(request([await make('P-256', 'ES256')]));
    expect(first).toEqual({ ok: false, error: 'use_dpop_nonce', description: 'a nonce is required', nonce: v.nonce() });
    expect((await v.verify(request([await make('P-256', 'ES256', { nonce: v.nonce() })]))).ok).toBe(true);
    const old = v.nonce();
    expect(v.rotateNonce()).not.toBe(old);
    refused(await v.verify(request([await make('P-256', 'ES256', { nonce: old })])), 'use_dpop_nonce', 'the nonce is not the current one');
  });
});

describe('the strict DPoP check, with headers only another client would send', () => {
  it('refuses an HS256 proof and one with alg none', async () => {
    const secret = Buffer.from('0123456789abcdef0123456789abcdef');
    const hs = await new SignJWT({ jti: 'a', htm: 'GET', htu: URL_, iat: NOW / 1000 })
      // A symmetric key in the header is what jose's types forbid and this check must refuse.
      .setProtectedHeader({ typ: 'dpop+jwt', alg: 'HS256', jwk: { kty: 'oct', k: secret.toString('base64url') } as JWK })
      .sign(secret);
    refused(await verifier().verify(request([hs])), 'invalid_dpop_proof', 'alg must be an asymmetric algorithm (got "HS256")');
    const good = await joseProof('P-256', 'ES256');
    const [, payload] = good.split('.');
    const header = Buffer.from(
      JSON.stringify({ typ: 'dpop+jwt', alg: 'none', jwk: createPublicKey(PEMS['P-256']).export({ format: 'jwk' }) }),
    ).toString('base64url');
    refused(
      await verifier().verify(request([`${header}.${payload}.`])),
      'invalid_dpop_proof',
      'alg must be an asymmetric algorithm (got "none")',
    );
  });

  it('refuses a jwk holding the private key, even with a good signature', async () => {
    const privateJwk = createPrivateKey(PEMS['P-256']).export({ format: 'jwk' });
    refused(
      await verifier().verify(request([await joseProof('P-256', 'ES256', {}, { jwk: privateJwk })])),
      'invalid_dpop_proof',
      'jwk must not hold private key members (got d)',
    );
  });

  it('refuses another typ, and a jwk of another key than the one that signed', async () => {
    refused(
      await verifier().verify(request([await joseProof('P-256', 'ES256', {}, { typ: 'JWT' })])),
      'invalid_dpop_proof',
      'typ must be dpop+jwt (got "JWT")',
    );
    const otherJwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    refused(
      await verifier().verify(request([await joseProof('P-256', 'ES256', {}, { jwk: otherJwk })])),
      'invalid_dpop_proof',
      /signature/,
    );
  });

  it('answers a refusal with a DPoP challenge naming the error', () => {
    expect(dpopChallenge({ ok: false, error: 'use_dpop_nonce', description: 'a "nonce" is required' })).toMatch(
      /^DPoP error="use_dpop_nonce", error_description="a nonce is required", algs="[A-Za-z0-9 ]+"$/,
    );
  });
});
