import { describe, expect, it } from 'vitest';
import { asksForNonce, createDpopNonces } from '../../src/token/dpop/nonces.js';

const IDP = 'https://idp.example.com';
const GW = 'https://gw.example.com';

describe('the DPoP nonce memory', () => {
  it("keeps each server's latest nonce and replaces it whenever a new one arrives", () => {
    const nonces = createDpopNonces();
    expect(nonces.get('token', IDP)).toBeUndefined();
    expect(nonces.remember('token', IDP, 'n-1')).toBe(true);
    expect(nonces.remember('token', IDP, undefined)).toBe(false);
    expect(nonces.get('token', IDP)).toBe('n-1');
    expect(nonces.remember('token', IDP, 'n-1')).toBe(false);
    expect(nonces.remember('token', IDP, ['n-2'])).toBe(true);
    expect(nonces.get('token', IDP)).toBe('n-2');
    expect(nonces.get('gateway', GW)).toBeUndefined();
  });

  it("keeps the token endpoint's nonces apart from the gateway's on the same origin", () => {
    const nonces = createDpopNonces();
    nonces.remember('token', GW, 'for-tokens');
    nonces.remember('gateway', GW, 'for-requests');
    expect(nonces.get('token', GW)).toBe('for-tokens');
    expect(nonces.get('gateway', GW)).toBe('for-requests');
    expect(nonces.get('gateway', IDP)).toBeUndefined();
  });

  it('ignores a value that is no nonce (RFC 9449 section 8.1), or several, keeping the one before', () => {
    const nonces = createDpopNonces();
    nonces.remember('gateway', GW, 'good');
    for (const bad of ['', 'has space', 'quote"', 'back\\slash', 'é', 'x'.repeat(1025), ['a', 'b'], []]) {
      expect(nonces.remember('gateway', GW, bad)).toBe(false);
    }
    expect(nonces.get('gateway', GW)).toBe('good');
    expect(nonces.remember('gateway', GW, 'eyJ7S_zG.eyJH0-Z.HX4w-7v')).toBe(true);
  });

  it('remembers a bounded number of servers, forgetting the oldest', () => {
    const nonces = createDpopNonces();
    for (let i = 0; i < 100; i++) nonces.remember('gateway', `https://h${i}.example`, `n${i}`);
    expect(nonces.get('gateway', 'https://h0.example')).toBeUndefined();
    expect(nonces.get('gateway', 'https://h99.example')).toBe('n99');
  });
});

describe('asksForNonce', () => {
  it.each([
    ['DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof"', true],
    ['dpop error=use_dpop_nonce', true],
    ['Bearer realm="x", DPoP algs="ES256", error="use_dpop_nonce"', true],
    [['Bearer realm="x"', 'DPoP error="use_dpop_nonce"'], true],
    ['DPoP error="invalid_token"', false],
    ['Bearer error="use_dpop_nonce"', false],
    ['DPoP error="invalid_token", Bearer error="use_dpop_nonce"', false],
    ['DPoP error_description="error=\\"use_dpop_nonce\\""', false],
    [undefined, false],
  ] as const)('reads %j as %s', (header, want) => {
    expect(asksForNonce(header as string | string[] | undefined)).toBe(want);
  });
});
