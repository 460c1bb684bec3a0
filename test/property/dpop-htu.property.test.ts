/**
 * The DPoP `htu` of a forwarded request (RFC 9449 §4.2, §4.3) against a WHATWG URL reading of the
 * URL the request goes to (`BASE_URL` + the target): odd ports, default ports, IPv6 and
 * upper-case hosts, path prefixes, percent-encoded and raw odd characters, queries, fragments.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createDpopVerifier } from '../../src/mock/dpop-verifier.js';
import { systemClock } from '../../src/core/clock.js';
import { generateDpopKey } from '../../src/token/dpop/dpop-key.js';
import { gatewayHtu, htuOf } from '../../src/token/dpop/htu.js';
import { createDpopProver } from '../../src/token/dpop/proof.js';
import { FC } from './budget.js';

/** What a WHATWG URL makes of the URL: without query and fragment. */
function whatwg(url: string): string {
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  return u.href;
}

const scheme = fc.constantFrom('https', 'http', 'HTTPS', 'Http');
const host = fc.oneof(
  fc.constantFrom(
    'gw.example.com',
    'GW.Example.COM',
    'localhost',
    '127.0.0.1',
    '[::1]',
    '[2001:DB8::0:1]',
    '[::ffff:192.0.2.1]',
    '[fe80::A:b]',
    'xn--bcher-kva.example',
  ),
  fc.domain(),
);
const port = fc.oneof(
  fc.constant(''),
  fc.constantFrom(':80', ':443', ':8443', ':1', ':65535', ':0443'),
  fc.integer({ min: 0, max: 65535 }).map((p) => `:${p}`),
);
/** Characters of a path segment as sent: unreserved, sub-delims, ':' '@', odd ones a server may see raw. */
const char = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(..."aZ09-._~!$&'()*+,;=:@") },
  { weight: 2, arbitrary: fc.constantFrom('%20', '%2F', '%2f', '%3F', '%23', '%25', '%e2%82%ac', '%C3%A9', '%41', '%7e', '%', '%g') },
  { weight: 1, arbitrary: fc.constantFrom('"', '<', '>', '^', '`', '{', '}', '|', '[', ']', 'é', '€', '😀', '\u00a0', '\x7f') },
);
const segment = fc.string({ minLength: 1, maxLength: 8, unit: char }).filter((s) => s !== '.' && s !== '..' && !/^(?:\.|%2e)+$/i.test(s));
const path = fc
  .array(segment, { maxLength: 5 })
  .chain((segs) => fc.boolean().map((slash) => `/${segs.join('/')}${slash && segs.length > 0 ? '/' : ''}`));
const prefix = fc.oneof(
  fc.constant(''),
  path.filter((p) => p !== '/'),
);
const tail = fc.oneof(fc.constant(''), fc.constantFrom('?', '?a=1&b=%20', '?x=/y?z', '#frag', '?q#f', '#', '?#'));

describe('the DPoP htu of a forwarded request', () => {
  it('is the WHATWG URL of BASE_URL + target, without query and fragment', () => {
    fc.assert(
      fc.property(scheme, host, port, prefix, path, tail, (s, h, p, pre, target, t) => {
        const base = `${s}://${h}${p}${pre}`;
        const htu = gatewayHtu(base)(`/api/v1${target}${t}`);
        // BASE_URL is kept without trailing slashes; the forwarded path is that prefix + the target.
        expect(htu).toBe(whatwg(`${base.replace(/\/+$/, '')}/api/v1${target}${t}`));
        expect(htu).not.toMatch(/[?#]/);
      }),
      FC,
    );
  });

  it('drops a trailing slash of BASE_URL, as the forwarded path does', () => {
    expect(gatewayHtu('https://GW.example.com:443/gw/')('/api/v1/t?x=1')).toBe('https://gw.example.com/gw/api/v1/t');
    expect(gatewayHtu('http://[0:0::1]:80')('/api/v1/a%2fb#c')).toBe('http://[::1]/api/v1/a%2fb');
    expect(gatewayHtu('https://gw.example.com:8443')('/api/v1/a b"c')).toBe('https://gw.example.com:8443/api/v1/a%20b%22c');
  });

  it('reads an absolute URL (the token endpoint) as WHATWG does, without query and fragment', () => {
    fc.assert(
      fc.property(scheme, host, port, path, tail, (s, h, p, pth, t) => {
        const url = `${s}://${h}${p}${pth}${t}`;
        expect(htuOf(url)).toBe(whatwg(url));
      }),
      FC,
    );
  });

  it('is accepted by the strict check of a server reading the request as Node does (origin + raw target)', async () => {
    const prover = createDpopProver({ key: generateDpopKey(), clock: systemClock });
    const verifier = createDpopVerifier();
    await fc.assert(
      fc.asyncProperty(scheme, host, port, prefix, path, tail, async (s, h, p, pre, target, t) => {
        const base = `${s}://${h}${p}${pre}`.replace(/\/+$/, '');
        const sent = `/api/v1${target}${t}`;
        const proof = prover.proof('GET', gatewayHtu(base)(sent));
        // The gateway sees the base path and the target on the wire, and the Host header.
        const url = new URL(base);
        const verdict = await verifier.verify({
          rawHeaders: ['DPoP', proof],
          method: 'GET',
          url: `${url.origin}${url.pathname.replace(/\/$/, '')}${sent}`,
        });
        expect(verdict).toMatchObject({ ok: true });
      }),
      { ...FC, numRuns: 300 },
    );
  });
});
