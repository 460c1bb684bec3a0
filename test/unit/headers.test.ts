import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/log.js';
import { setProof, type ProofTarget } from '../../src/proxy/proof-header.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readCallerRequest } from '../../src/proxy/caller-request.js';
import { callerResponseHeaders, flatHeaders, rewriteLocation, SeenHeaderNames } from '../../src/proxy/response-headers.js';
import { authorizationFor, type Authorization } from '../../src/token/held-token.js';
import { createDpopClient, dpopGateway, generateDpopKey } from '../../src/token/dpop/index.js';

const BASE = 'https://gw.example.com/gw';
const CALLER = 'http://127.0.0.1:8180';

/**
 * A caller's request with these raw headers, as the forwarder reads it: the headers it forwards
 * end with the pair reserved for the proxy's own Authorization, which is taken off here.
 */
const readRequestHeaders = (rawHeaders: string[]) => {
  const request = readCallerRequest({ rawHeaders } as unknown as IncomingMessage, {} as ServerResponse, 0, false);
  expect(request.forward.slice(-2)).toEqual(['authorization', '']);
  return { ...request, forward: request.forward.slice(0, -2) };
};

/** A caller at `origin`, through `mount` (none by default). */
const at = (origin: string, mount = '') => ({ origin, mount });

/** The gateway at BASE, with the header names it last sent when `seenNames` is given. */
const gw = (seenNames?: SeenHeaderNames) => ({ baseUrl: BASE, seenNames });

/** [name, value] pairs of a flat raw header list. */
function pairs(raw: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) out.push([raw[i]!, raw[i + 1]!]);
  return out;
}

describe('readRequestHeaders', () => {
  it('drops hop-by-hop headers, the caller credentials, Host and Expect, and keeps the rest in case and order', () => {
    const raw = [
      'Host',
      '127.0.0.1:8180',
      'Accept',
      'application/json',
      'Connection',
      'keep-alive',
      'Keep-Alive',
      'timeout=5',
      'TE',
      'trailers',
      'Trailer',
      'X-Checksum',
      'Upgrade',
      'h2c',
      'Transfer-Encoding',
      'chunked',
      'Proxy-Authorization',
      'Basic cHJveHk6cHc=',
      'Proxy-Connection',
      'keep-alive',
      'Authorization',
      'Bearer caller-token',
      'Expect',
      '100-continue',
      'X-Request-ID',
      'r-1',
      'cookie',
      'a=1',
      'Cookie',
      'b=2',
      'content-type',
      'application/json',
    ];
    expect(pairs(readRequestHeaders(raw).forward)).toEqual([
      ['Accept', 'application/json'],
      ['X-Request-ID', 'r-1'],
      ['cookie', 'a=1'],
      ['Cookie', 'b=2'],
      ['content-type', 'application/json'],
    ]);
  });

  it('drops the headers Connection names, in any case and spacing, across repeated Connection fields', () => {
    const raw = [
      'Connection',
      'close, X-Hop ,x-OTHER',
      'x-hop',
      '1',
      'X-Other',
      '2',
      'X-Kept',
      '3',
      'connection',
      'X-Third',
      'X-THIRD',
      '4',
    ];
    expect(pairs(readRequestHeaders(raw).forward)).toEqual([['X-Kept', '3']]);
  });

  it("drops the caller's Authorization in any letter case (the proxy adds its own)", () => {
    expect(readRequestHeaders(['AUTHORIZATION', 'Basic YTpi', 'authorization', 'Bearer x', 'Accept', '*/*']).forward).toEqual([
      'Accept',
      '*/*',
    ]);
  });

  it('adds no X-Forwarded headers', () => {
    const out = readRequestHeaders(['Accept', '*/*']).forward;
    expect(out.filter((_v, i) => i % 2 === 0).some((n) => n.toLowerCase().startsWith('x-forwarded'))).toBe(false);
  });

  it('reads Content-Length, Transfer-Encoding and Host in the same pass', () => {
    expect(readRequestHeaders(['host', 'localhost:9000', 'Content-Length', '12'])).toMatchObject({
      contentLength: '12',
      transferEncoding: false,
      host: 'localhost:9000',
    });
    expect(readRequestHeaders(['Transfer-Encoding', 'chunked'])).toMatchObject({
      contentLength: undefined,
      transferEncoding: true,
      host: undefined,
    });
  });
});

describe('callerResponseHeaders', () => {
  const raw = (...pairs: string[]): Buffer[] => pairs.map((p) => Buffer.from(p, 'latin1'));

  it('drops hop-by-hop headers and those Connection names, keeping the rest in order and letter case', () => {
    const headers = raw(
      'Content-Type',
      'application/json',
      'Connection',
      'keep-alive, X-Hop',
      'Keep-Alive',
      'timeout=5',
      'X-Hop',
      'gone',
      'Transfer-Encoding',
      'chunked',
      'Trailer',
      'X-Checksum',
      'Upgrade',
      'h2c',
      'Proxy-Authenticate',
      'Basic',
      'Proxy-Connection',
      'keep-alive',
      'TE',
      'trailers',
      'ETag',
      '"v1"',
      'X-Request-Id',
      'r-1',
      'content-length',
      '2',
    );
    expect(callerResponseHeaders(headers, gw(), at(CALLER))).toEqual([
      'Content-Type',
      'application/json',
      'ETag',
      '"v1"',
      'X-Request-Id',
      'r-1',
      'content-length',
      '2',
    ]);
  });

  it('drops what repeated Connection fields name, whatever their case', () => {
    expect(callerResponseHeaders(raw('connection', 'close', 'Connection', 'X-A', 'x-a', '1', 'X-B', '2'), gw(), at(CALLER))).toEqual([
      'X-B',
      '2',
    ]);
  });

  it('keeps repeated Set-Cookie headers, each as it came', () => {
    const headers = raw('Set-Cookie', 'a=1; Path=/', 'Set-Cookie', 'b=2; HttpOnly', 'set-cookie', 'c=3, d=4');
    expect(callerResponseHeaders(headers, gw(), at(CALLER))).toEqual([
      'Set-Cookie',
      'a=1; Path=/',
      'Set-Cookie',
      'b=2; HttpOnly',
      'set-cookie',
      'c=3, d=4',
    ]);
  });

  it('passes header values as latin1 bytes, unchanged', () => {
    expect(callerResponseHeaders([Buffer.from('X-Name'), Buffer.from([0x63, 0x61, 0x66, 0xe9])], gw(), at(CALLER))).toEqual([
      'X-Name',
      'caf\u00e9',
    ]);
  });

  it('gives the same list when handed the header object undici parsed from the same bytes', () => {
    // As undici builds it: lower-case names, a value sent once as a string, repeated ones as an array.
    const parse = (list: Buffer[]): Record<string, string | string[]> => {
      const obj: Record<string, string | string[]> = {};
      for (let i = 0; i < list.length; i += 2) {
        const key = list[i]!.toString('latin1').toLowerCase();
        const value = list[i + 1]!.toString('latin1');
        const had = obj[key];
        obj[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
      }
      return obj;
    };
    const cases = [
      raw('Content-Type', 'text/plain', 'Connection', 'X-Hop', 'X-Hop', '1', 'ETag', '"v1"'),
      raw('Set-Cookie', 'a=1', 'X-Id', 'r-1', 'set-cookie', 'b=2', 'Content-Length', '0'),
      raw('Location', 'https://gw.example.com/gw/api/v1/x', 'x-name', '\u00e9t\u00e9'),
    ];
    for (const headers of cases) {
      expect(callerResponseHeaders(headers, gw(), at(CALLER), parse(headers))).toEqual(callerResponseHeaders(headers, gw(), at(CALLER)));
    }
    expect(callerResponseHeaders(cases[1]!, gw(), at(CALLER), parse(cases[1]!))).toEqual([
      'Set-Cookie',
      'a=1',
      'X-Id',
      'r-1',
      'set-cookie',
      'b=2',
      'Content-Length',
      '0',
    ]);
  });

  it("keeps each answer's own letter case when the names at the same places change between answers", () => {
    expect(callerResponseHeaders(raw('X-Abc', '1', 'ETag', 'a'), gw(), at(CALLER))).toEqual(['X-Abc', '1', 'ETag', 'a']);
    expect(callerResponseHeaders(raw('x-abc', '2', 'Etag', 'b'), gw(), at(CALLER))).toEqual(['x-abc', '2', 'Etag', 'b']);
    expect(callerResponseHeaders(raw('X-Abd', '3', 'Connection', 'X-Abd', 'Date', 'd'), gw(), at(CALLER))).toEqual(['Date', 'd']);
    expect(callerResponseHeaders(raw('X-Abc', '4', 'ETag', 'c'), gw(), at(CALLER))).toEqual(['X-Abc', '4', 'ETag', 'c']);
  });

  it('keeps each answer its own letter case through the names an earlier answer left at the same places', () => {
    const seen = new SeenHeaderNames();
    const answer = (...pairs: string[]): string[] => callerResponseHeaders(raw(...pairs), gw(seen), at(CALLER));
    expect(answer('X-Abc', '1', 'ETag', 'a')).toEqual(['X-Abc', '1', 'ETag', 'a']);
    expect(seen.names).toEqual(['X-Abc', 'ETag']);
    expect(answer('X-Abc', '2', 'ETag', 'b')).toEqual(['X-Abc', '2', 'ETag', 'b']);
    expect(answer('x-abc', '3', 'Etag', 'c')).toEqual(['x-abc', '3', 'Etag', 'c']);
    expect(answer('X-Abd', '4', 'Connection', 'X-Abd', 'Date', 'd')).toEqual(['Date', 'd']);
    expect(seen.lower).toEqual(['x-abd', 'connection', 'date']);
    expect(answer('X-Abc', '5', 'ETag', 'e', 'Date', 'f')).toEqual(['X-Abc', '5', 'ETag', 'e', 'Date', 'f']);
  });

  it('remembers the names of at most 64 places, however many headers an answer has', () => {
    const seen = new SeenHeaderNames();
    const many = Array.from({ length: 100 }, (_v, i) => [`X-H${i}`, `${i}`]).flat();
    expect(callerResponseHeaders(raw(...many), gw(seen), at(CALLER))).toEqual(many);
    expect(seen.names).toHaveLength(64);
    expect(callerResponseHeaders(raw(...many), gw(seen), at(CALLER))).toEqual(many);
  });

  it('rewrites a Location into the gateway to the origin the caller used', () => {
    const headers = raw('Location', 'https://gw.example.com/gw/api/v1/tickets/T-2', 'X-Other', 'https://gw.example.com/gw/api/v1/x');
    expect(callerResponseHeaders(headers, gw(), at('http://localhost:9000'))).toEqual([
      'Location',
      'http://localhost:9000/api/v1/tickets/T-2',
      'X-Other',
      'https://gw.example.com/gw/api/v1/x',
    ]);
  });
});

describe('flatHeaders', () => {
  it('turns a parsed header object into a flat list, repeated fields in order', () => {
    expect(flatHeaders({ a: '1', 'set-cookie': ['x', 'y'], b: undefined })).toEqual(['a', '1', 'set-cookie', 'x', 'set-cookie', 'y']);
  });
});

describe('rewriteLocation', () => {
  it.each([
    ['https://gw.example.com/gw/api/v1/tickets/T-2', `${CALLER}/api/v1/tickets/T-2`],
    ['https://gw.example.com/gw/api/v1/tickets?page=2#top', `${CALLER}/api/v1/tickets?page=2#top`],
    ['https://gw.example.com/gw', `${CALLER}/`],
    ['https://gw.example.com/gw/', `${CALLER}/`],
    ['https://GW.Example.com/gw/api/v1/x', `${CALLER}/api/v1/x`],
  ])('rewrites %s into the caller origin', (location, expected) => {
    expect(rewriteLocation(location, { baseUrl: BASE }, at(CALLER))).toBe(expected);
  });

  it.each([
    'https://gw.example.com/gwx/api/v1/x',
    'https://gw.example.com/other/api/v1/x',
    'https://gw.example.com/',
    'https://other.example.com/gw/api/v1/x',
    'http://gw.example.com/gw/api/v1/x',
    'https://gw.example.com:8443/gw/api/v1/x',
    'https://gw.example.com.evil.test/gw/api/v1/x',
    'tickets/T-2',
    '/other/api/v1/x',
    '/gwx/api/v1/x',
  ])('leaves %s alone', (location) => {
    expect(rewriteLocation(location, { baseUrl: BASE }, at(CALLER))).toBe(location);
  });

  it('strips the path prefix from a Location that is an absolute path into the gateway', () => {
    expect(rewriteLocation('/gw/api/v1/tickets/T-2', { baseUrl: BASE }, at(CALLER))).toBe('/api/v1/tickets/T-2');
    expect(rewriteLocation('/gw?x=1', { baseUrl: BASE }, at(CALLER))).toBe('/?x=1');
    expect(rewriteLocation('/gw', { baseUrl: BASE }, at(CALLER))).toBe('/');
  });

  it('without a caller origin (a caller on a Unix socket), rewrites into an absolute path', () => {
    expect(rewriteLocation('https://gw.example.com/gw/api/v1/tickets?page=2#top', { baseUrl: BASE }, at(''))).toBe(
      '/api/v1/tickets?page=2#top',
    );
    expect(rewriteLocation('https://gw.example.com/gw?x=1', { baseUrl: BASE }, at(''))).toBe('/?x=1');
    expect(rewriteLocation('https://gw.example.com/gw', { baseUrl: BASE }, at(''))).toBe('/');
    expect(rewriteLocation('https://other.example.com/gw/api/v1/x', { baseUrl: BASE }, at(''))).toBe(
      'https://other.example.com/gw/api/v1/x',
    );
  });

  it('without a path prefix, rewrites the origin and leaves paths alone', () => {
    const base = 'https://gw.example.com';
    expect(rewriteLocation('https://gw.example.com/api/v1/x', { baseUrl: base }, at(CALLER))).toBe(`${CALLER}/api/v1/x`);
    expect(rewriteLocation('https://gw.example.com', { baseUrl: base }, at(CALLER))).toBe(`${CALLER}/`);
    expect(rewriteLocation('https://gw.example.community/api/v1/x', { baseUrl: base }, at(CALLER))).toBe(
      'https://gw.example.community/api/v1/x',
    );
    expect(rewriteLocation('/api/v1/x', { baseUrl: base }, at(CALLER))).toBe('/api/v1/x');
  });

  it("behind a mount, puts the mount in front of every rewritten Location, and of a path under the route's paths", () => {
    const paths = { prefixes: ['/api/v1', '/api/v2'] };
    expect(rewriteLocation(`${BASE}/api/v1/x?y=1`, { baseUrl: BASE, paths }, at(CALLER, '/eu'))).toBe(`${CALLER}/eu/api/v1/x?y=1`);
    expect(rewriteLocation('/gw/api/v2/x', { baseUrl: BASE, paths }, at(CALLER, '/eu'))).toBe('/eu/api/v2/x');
    expect(rewriteLocation(`${BASE}/api/v1/x`, { baseUrl: BASE, paths }, at('', '/eu'))).toBe('/eu/api/v1/x');
    const bare = { baseUrl: 'https://gw.example.com', paths };
    expect(rewriteLocation('/api/v2/t?p=2', bare, at(CALLER, '/eu'))).toBe('/eu/api/v2/t?p=2');
    expect(rewriteLocation('/api/v1', bare, at(CALLER, '/eu'))).toBe('/eu/api/v1');
    expect(rewriteLocation('/api/v3/t', bare, at(CALLER, '/eu'))).toBe('/api/v3/t');
    expect(rewriteLocation('/api/v1x', bare, at(CALLER, '/eu'))).toBe('/api/v1x');
  });
});

const claims = (proof: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(proof.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

describe('the credentials of a forwarded request: its Authorization, and a DPoP proof before it', () => {
  const dpop = createDpopClient({ mode: 'on', key: generateDpopKey(), clock: systemClock, log: createLogger('silent') });
  const gateway = dpopGateway('https://gw.example:8443/pre/');
  /** A request of `method` to `target` on the gateway. */
  const to = (method: string, target: string) => ({ method, target, gateway });
  /** As an exchange authorises each send: the last pair's value, then the proof pair (proof-header.ts). */
  const setAuthorization = (headers: string[], auth: Authorization, target: ProofTarget, hasProof: boolean): boolean => {
    headers[headers.length - 1] = auth.header;
    return setProof(headers, auth, target, hasProof);
  };

  it('is one Authorization pair for a Bearer token, and nothing more', () => {
    const auth = authorizationFor({ accessToken: 'b', lifetimeMs: 1, tokenType: 'Bearer' }, dpop);
    expect(auth).toEqual({ token: 'b', header: 'Bearer b' });
    const headers = ['accept', '*/*', 'authorization', ''];
    expect(setAuthorization(headers, auth, to('GET', '/x'), false)).toBe(false);
    expect(headers).toEqual(['accept', '*/*', 'authorization', 'Bearer b']);
  });

  it('puts a fresh proof before a DPoP Authorization, replaced on a replay and dropped if the new token is Bearer', () => {
    const key = dpop.prover.key();
    const auth = authorizationFor({ accessToken: 'd', lifetimeMs: 1, tokenType: 'DPoP', dpopKey: key }, dpop);
    const headers = ['accept', '*/*', 'authorization', ''];
    expect(setAuthorization(headers, auth, to('POST', '/api/v1/x?q=1#f'), false)).toBe(true);
    expect(headers.slice(0, 3)).toEqual(['accept', '*/*', 'dpop']);
    expect(headers.slice(4)).toEqual(['authorization', 'DPoP d']);
    expect(claims(headers[3]!)).toMatchObject({ htm: 'POST', htu: 'https://gw.example:8443/pre/api/v1/x', ath: expect.any(String) });
    const first = headers[3];
    expect(setAuthorization(headers, auth, to('POST', '/api/v1/x'), true)).toBe(true);
    expect(headers).toHaveLength(6);
    expect(headers[3]).not.toBe(first);
    expect(setAuthorization(headers, authorizationFor({ accessToken: 'b', lifetimeMs: 1 }, dpop), to('POST', '/api/v1/x'), true)).toBe(
      false,
    );
    expect(headers).toEqual(['accept', '*/*', 'authorization', 'Bearer b']);
  });

  it('keeps the gateway nonce of any answer and asks for a replay only on a use_dpop_nonce 401 carrying one', () => {
    const auth = authorizationFor({ accessToken: 'd', lifetimeMs: 1, tokenType: 'DPoP', dpopKey: dpop.prover.key() }, dpop);
    expect(auth.answered!(gateway, 200, { 'dpop-nonce': 'g-1' })).toBe(false);
    expect(claims(auth.proof!('GET', '/', gateway))).toMatchObject({ nonce: 'g-1' });
    expect(auth.answered!(gateway, 401, { 'www-authenticate': 'DPoP error="invalid_token"', 'dpop-nonce': 'g-2' })).toBe(false);
    expect(auth.answered!(gateway, 401, { 'www-authenticate': 'Bearer, DPoP error="use_dpop_nonce"' })).toBe(false);
    expect(auth.answered!(gateway, 401, { 'www-authenticate': 'DPoP error="use_dpop_nonce"', 'dpop-nonce': 'g-3' })).toBe(true);
    expect(claims(auth.proof!('GET', '/', gateway))).toMatchObject({ nonce: 'g-3' });
  });
});
