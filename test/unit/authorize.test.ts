import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/log.js';
import { authorize } from '../../src/proxy/authorize.js';
import { authorizationFor } from '../../src/token/authorization.js';
import { createDpopClient, generateDpopKey } from '../../src/token/dpop/index.js';

const claims = (proof: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(proof.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

describe('the authorization of a forwarded request', () => {
  const dpop = createDpopClient({
    mode: 'on',
    key: generateDpopKey(),
    baseUrl: 'https://gw.example:8443/pre/',
    clock: systemClock,
    log: createLogger('silent'),
  });

  it('is one Authorization pair for a Bearer token, and nothing more', () => {
    const auth = authorizationFor({ accessToken: 'b', lifetimeMs: 1, tokenType: 'Bearer' }, dpop);
    expect(auth).toEqual({ token: 'b', header: 'Bearer b' });
    const headers = ['accept', '*/*', 'authorization', ''];
    expect(authorize(headers, auth, 'GET', '/x', false)).toBe(false);
    expect(headers).toEqual(['accept', '*/*', 'authorization', 'Bearer b']);
  });

  it('puts a fresh proof before a DPoP Authorization, replaced on a replay and dropped if the new token is Bearer', () => {
    const key = dpop.prover.key();
    const auth = authorizationFor({ accessToken: 'd', lifetimeMs: 1, tokenType: 'DPoP', dpopKey: key }, dpop);
    const headers = ['accept', '*/*', 'authorization', ''];
    expect(authorize(headers, auth, 'POST', '/api/v1/x?q=1#f', false)).toBe(true);
    expect(headers.slice(0, 3)).toEqual(['accept', '*/*', 'dpop']);
    expect(headers.slice(4)).toEqual(['authorization', 'DPoP d']);
    expect(claims(headers[3]!)).toMatchObject({ htm: 'POST', htu: 'https://gw.example:8443/pre/api/v1/x', ath: expect.any(String) });
    const first = headers[3];
    expect(authorize(headers, auth, 'POST', '/api/v1/x', true)).toBe(true);
    expect(headers).toHaveLength(6);
    expect(headers[3]).not.toBe(first);
    expect(authorize(headers, authorizationFor({ accessToken: 'b', lifetimeMs: 1 }, dpop), 'POST', '/api/v1/x', true)).toBe(false);
    expect(headers).toEqual(['accept', '*/*', 'authorization', 'Bearer b']);
  });

  it('keeps the gateway nonce of any answer and asks for a replay only on a use_dpop_nonce 401 carrying one', () => {
    const auth = authorizationFor({ accessToken: 'd', lifetimeMs: 1, tokenType: 'DPoP', dpopKey: dpop.prover.key() }, dpop);
    expect(auth.answered!(200, { 'dpop-nonce': 'g-1' })).toBe(false);
    expect(claims(auth.proof!('GET', '/'))).toMatchObject({ nonce: 'g-1' });
    expect(auth.answered!(401, { 'www-authenticate': 'DPoP error="invalid_token"', 'dpop-nonce': 'g-2' })).toBe(false);
    expect(auth.answered!(401, { 'www-authenticate': 'Bearer, DPoP error="use_dpop_nonce"' })).toBe(false);
    expect(auth.answered!(401, { 'www-authenticate': 'DPoP error="use_dpop_nonce"', 'dpop-nonce': 'g-3' })).toBe(true);
    expect(claims(auth.proof!('GET', '/'))).toMatchObject({ nonce: 'g-3' });
  });
});
