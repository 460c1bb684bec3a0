import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { calculateJwkThumbprint, compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { DPOP_ALGS, type DpopAlg } from '../../src/config/config.js';
import { derToRs, generateDpopKey, jwkThumbprint, loadDpopKey, SUPPORTED_DPOP_ALGS } from '../../src/token/dpop/dpop-key.js';
import { accessTokenHash, createDpopProver } from '../../src/token/dpop/proof.js';
import { BAD_PEMS, PEMS } from '../helpers/dpop-keys.js';
import { FakeClock } from '../helpers/fake-clock.js';

const HTU = 'https://gw.example.com/gw/api/v1/tickets';

function decode(proof: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [h, c] = proof.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString()), claims: JSON.parse(Buffer.from(c!, 'base64url').toString()) };
}

/** Verifies a proof with jose, an implementation independent of the proof maker. */
async function verifiedByJose(proof: string): Promise<Record<string, unknown>> {
  const { alg, jwk } = decodeProtectedHeader(proof) as { alg: string; jwk: JWK };
  const { payload } = await compactVerify(proof, await importJWK(jwk, alg), { algorithms: [alg] });
  return JSON.parse(Buffer.from(payload).toString()) as Record<string, unknown>;
}

describe('DPoP keys', () => {
  it.each([
    ['P-256', undefined, 'ES256'],
    ['P-384', undefined, 'ES384'],
    ['ed25519', undefined, 'EdDSA'],
    ['rsa', undefined, 'PS256'],
    ['rsa', 'RS256', 'RS256'],
    ['rsa', 'PS512', 'PS512'],
  ] as const)('reads a %s key from PEM and signs with %s -> %s', async (type, alg, want) => {
    const key = loadDpopKey(PEMS[type], alg);
    expect(key.alg).toBe(want);
    const proof = createDpopProver({ key, clock: new FakeClock() }).proof('GET', HTU);
    expect((await verifiedByJose(proof)).htu).toBe(HTU);
  });

  it('refuses keys that cannot sign proofs, saying why and never showing the key', () => {
    const cases: [string, string][] = [
      [BAD_PEMS.rsa1024, 'holds an RSA key of 1024 bits; at least 2048 are required'],
      [BAD_PEMS.secp256k1, 'holds an EC key on secp256k1'],
      [BAD_PEMS.x25519, 'holds a key of type x25519'],
      [BAD_PEMS.publicP256, 'holds a public key or certificate; the proofs need the private key'],
      ['not a key', 'does not hold an unencrypted PEM private key'],
    ];
    for (const [pem, message] of cases) {
      let thrown: Error | undefined;
      try {
        loadDpopKey(pem);
      } catch (err) {
        thrown = err as Error;
      }
      expect(thrown?.message).toContain(message);
      expect(thrown?.message).not.toContain('PRIVATE KEY');
    }
  });

  it('refuses an algorithm the key cannot sign', () => {
    expect(() => loadDpopKey(PEMS['P-256'], 'ES384')).toThrow('holds a P-256 key, which cannot sign ES384 (use ES256)');
    expect(() => loadDpopKey(PEMS.ed25519, 'PS256')).toThrow('cannot sign PS256 (use EdDSA)');
  });

  it('generates a P-256 key by default, or the type the algorithm needs', () => {
    expect(generateDpopKey().jwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(generateDpopKey('ES384').jwk).toMatchObject({ kty: 'EC', crv: 'P-384' });
    expect(generateDpopKey('EdDSA').jwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
    expect(generateDpopKey('RS256').jwk).toMatchObject({ kty: 'RSA', e: 'AQAB' });
    expect(generateDpopKey().thumbprint).not.toBe(generateDpopKey().thumbprint);
  });

  it('knows every algorithm the DPOP_ALG setting offers', () => {
    expect([...SUPPORTED_DPOP_ALGS].sort()).toEqual([...DPOP_ALGS].sort());
  });

  it("computes the RFC 7638 thumbprint: the RFC's own example", () => {
    const jwk = {
      kty: 'RSA',
      n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
      e: 'AQAB',
      alg: 'RS256',
      kid: '2011-04-29',
    };
    expect(jwkThumbprint(jwk)).toBe('NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
  });

  it.each(Object.keys(PEMS) as (keyof typeof PEMS)[])('computes the thumbprint jose computes for a %s key', async (type) => {
    const key = loadDpopKey(PEMS[type]);
    const jwk = createPublicKey(PEMS[type]).export({ format: 'jwk' }) as JWK;
    expect(key.thumbprint).toBe(await calculateJwkThumbprint(jwk, 'sha256'));
  });

  it('shows no private member in the key object, its JWK or its header', () => {
    for (const type of Object.keys(PEMS) as (keyof typeof PEMS)[]) {
      const key = loadDpopKey(PEMS[type]);
      const { header } = decode(`${key.encodedHeader}.e30.`);
      for (const shown of [JSON.stringify(key), JSON.stringify(header)]) {
        for (const member of ['"d"', '"p"', '"q"', '"dp"', '"dq"', '"qi"']) expect(shown).not.toContain(member);
      }
      expect(header).toEqual({ typ: 'dpop+jwt', alg: key.alg, jwk: key.jwk });
    }
  });
});

describe('DPoP proofs', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0, 750));

  it.each(['ES256', 'ES384', 'EdDSA', 'PS256', 'RS384'] as DpopAlg[])(
    'signs a proof jose verifies, with the claims of RFC 9449 section 4.2 (%s)',
    async (alg) => {
      const prover = createDpopProver({ key: generateDpopKey(alg), clock });
      const proof = prover.proof('POST', HTU, { token: 'the-token', nonce: 'n-1' });
      const claims = await verifiedByJose(proof);
      expect(claims).toEqual({
        jti: expect.any(String),
        htm: 'POST',
        htu: HTU,
        iat: Date.UTC(2026, 0, 1, 12) / 1000,
        ath: accessTokenHash('the-token'),
        nonce: 'n-1',
      });
      expect(decode(proof).header).toMatchObject({ typ: 'dpop+jwt', alg });
    },
  );

  it('signs ECDSA in the JWS form (R || S), not DER', () => {
    const proof = createDpopProver({ key: generateDpopKey('ES256'), clock }).proof('GET', HTU);
    expect(Buffer.from(proof.split('.')[2]!, 'base64url')).toHaveLength(64);
    const p384 = createDpopProver({ key: generateDpopKey('ES384'), clock }).proof('GET', HTU);
    expect(Buffer.from(p384.split('.')[2]!, 'base64url')).toHaveLength(96);
  });

  it('gives every proof a fresh jti and sends no ath or nonce it was not given', () => {
    const prover = createDpopProver({ key: generateDpopKey(), clock });
    const jtis = new Set(Array.from({ length: 100 }, () => decode(prover.proof('GET', HTU)).claims.jti));
    expect(jtis.size).toBe(100);
    expect(Object.keys(decode(prover.proof('GET', HTU)).claims).sort()).toEqual(['htm', 'htu', 'iat', 'jti']);
  });

  it('computes ath as base64url SHA-256 of the token, and a new one when the token changes', () => {
    const prover = createDpopProver({ key: generateDpopKey(), clock });
    // RFC 9449 section 7.1's example token and its ath.
    const token = 'Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU';
    expect(decode(prover.proof('GET', HTU, { token })).claims.ath).toBe('fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo');
    expect(decode(prover.proof('GET', HTU, { token: 'other' })).claims.ath).toBe(accessTokenHash('other'));
    expect(decode(prover.proof('GET', HTU, { token })).claims.ath).toBe('fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo');
  });

  it('keeps htu and nonce exactly, escaped as JSON', () => {
    const prover = createDpopProver({ key: generateDpopKey(), clock });
    const htu = 'https://[::1]:8443/a%22b/c';
    const nonce = '!#"\\x';
    expect(decode(prover.proof('PATCH', htu, { nonce })).claims).toMatchObject({ htm: 'PATCH', htu, nonce });
  });

  it('swaps the key at once, and still signs with an older key when asked to (a token bound to it)', async () => {
    const first = generateDpopKey();
    const second = generateDpopKey('EdDSA');
    const prover = createDpopProver({ key: first, clock });
    expect(prover.replaceKey(loadDpopKey(PEMS['P-256']))).toBe(true);
    expect(prover.replaceKey(loadDpopKey(PEMS['P-256']))).toBe(false);
    expect(prover.replaceKey(second)).toBe(true);
    expect(prover.key()).toBe(second);
    expect(decode(prover.proof('GET', HTU)).header.jwk).toEqual(second.jwk);
    const old = prover.proof('GET', HTU, { key: first });
    expect(decode(old).header.jwk).toEqual(first.jwk);
    await verifiedByJose(old);
  });
});

describe('ECDSA signatures as JWS wants them (R || S)', () => {
  it('turns DER signatures into R || S that verify as IEEE P1363, short and high-bit integers included', () => {
    for (const [curve, hash, size] of [
      ['P-256', 'sha256', 32],
      ['P-384', 'sha384', 48],
    ] as const) {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: curve });
      for (let i = 0; i < 600; i++) {
        const data = Buffer.from(`input ${i}`);
        const rs = derToRs(sign(hash, data, privateKey), size);
        expect(rs).toHaveLength(2 * size);
        expect(verify(hash, data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, rs)).toBe(true);
      }
    }
  });

  it('pads a short integer and drops the zero DER puts before a high-bit one', () => {
    const s = Buffer.concat([Buffer.from([0x00]), Buffer.alloc(32, 0xff)]);
    const der = Buffer.concat([Buffer.from([0x30, 3 + 2 + s.length, 0x02, 0x01, 0x07, 0x02, s.length]), s]);
    const rs = derToRs(der, 32);
    expect(rs.subarray(0, 32)).toEqual(Buffer.concat([Buffer.alloc(31), Buffer.from([0x07])]));
    expect(rs.subarray(32)).toEqual(Buffer.alloc(32, 0xff));
  });
});
