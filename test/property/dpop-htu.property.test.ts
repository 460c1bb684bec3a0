/**
 * The DPoP `htu` of a forwarded request (RFC 9449 §4.2, §4.3): the gateway's origin and path
 * prefix followed by the path exactly as it goes on the request line, never re-encoded by a URL
 * parser (Node 22 and Node 24 encode different sets of raw characters): odd ports, default ports,
 * IPv6 and upper-case hosts, path prefixes, percent-encoded and raw odd characters, queries.
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

/**
 * BASE_URL as the proxy writes it: its origin, and its path prefix without trailing slashes, each
 * as the configuration reads it (a WHATWG URL); the request line is this prefix and the target.
 */
function gateway(base: string): { origin: string; prefix: string } {
  const u = new URL(base);
  return { origin: `${u.protocol}//${u.host}`, prefix: u.pathname.replace(/\/+$/, '') };
}

/** A target's path: up to its query. */
const pathOf = (target: string): string => target.split('?')[0]!;

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
/**
 * Characters of a path segment as sent: unreserved, sub-delims, ':' '@', and the raw ones Node's
 * HTTP parser lets through (printable ASCII) that URL parsers encode or not, each its own way.
 */
const char = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(..."aZ09-._~!$&'()*+,;=:@") },
  { weight: 2, arbitrary: fc.constantFrom('%20', '%2F', '%2f', '%3F', '%23', '%25', '%e2%82%ac', '%C3%A9', '%41', '%7e', '%', '%g') },
  { weight: 2, arbitrary: fc.constantFrom('"', '<', '>', '^', '`', '{', '}', '|', '[', ']') },
);
const segment = fc.string({ minLength: 1, maxLength: 8, unit: char }).filter((s) => s !== '.' && s !== '..' && !/^(?:\.|%2e)+$/i.test(s));
const path = fc
  .array(segment, { maxLength: 5 })
  .chain((segs) => fc.boolean().map((slash) => `/${segs.join('/')}${slash && segs.length > 0 ? '/' : ''}`));
const prefix = fc.oneof(
  fc.constant(''),
  path.filter((p) => p !== '/'),
);
/** The path guard refuses a raw `#` before a request is forwarded: queries only. */
const tail = fc.oneof(fc.constant(''), fc.constantFrom('?', '?a=1&b=%20', '?x=/y?z', '?^{}', '?q=%23f'));
/** An absolute URL's query and fragment (the token endpoint's URL). */
const urlTail = fc.oneof(tail, fc.constantFrom('#frag', '?q#f', '#', '?#'));

describe('the DPoP htu of a forwarded request', () => {
  it("is BASE_URL's origin and path prefix followed by the target's path exactly as sent, without the query", () => {
    fc.assert(
      fc.property(scheme, host, port, prefix, path, tail, (s, h, p, pre, target, t) => {
        const base = `${s}://${h}${p}${pre}`;
        const sent = `/api/v1${target}${t}`;
        const { origin, prefix: basePath } = gateway(base);
        expect(gatewayHtu(base)(sent)).toBe(`${origin}${basePath}${pathOf(sent)}`);
      }),
      FC,
    );
  });

  it('drops a trailing slash of BASE_URL, as the forwarded path does, and keeps raw characters raw', () => {
    expect(gatewayHtu('https://GW.example.com:443/gw/')('/api/v1/t?x=1')).toBe('https://gw.example.com/gw/api/v1/t');
    expect(gatewayHtu('http://[0:0::1]:80')('/api/v1/a%2fb?c')).toBe('http://[::1]/api/v1/a%2fb');
    expect(gatewayHtu('https://gw.example.com:8443')('/api/v1/a^b"c{d}`e')).toBe('https://gw.example.com:8443/api/v1/a^b"c{d}`e');
  });

  it('reads an absolute URL (the token endpoint) as WHATWG does, without query and fragment', () => {
    fc.assert(
      fc.property(scheme, host, port, path, urlTail, (s, h, p, pth, t) => {
        const url = `${s}://${h}${p}${pth}${t}`;
        expect(htuOf(url)).toBe(whatwg(url));
      }),
      FC,
    );
  });

  it('is accepted by the strict check of a server that builds the URL from the request line it receives', async () => {
    const prover = createDpopProver({ key: generateDpopKey(), clock: systemClock });
    const verifier = createDpopVerifier();
    await fc.assert(
      fc.asyncProperty(scheme, host, port, prefix, path, tail, async (s, h, p, pre, target, t) => {
        const base = `${s}://${h}${p}${pre}`;
        const sent = `/api/v1${target}${t}`;
        const proof = prover.proof('GET', gatewayHtu(base)(sent));
        // The gateway sees the base path and the target on the request line, and the Host header.
        const { origin, prefix: basePath } = gateway(base);
        const verdict = await verifier.verify({ rawHeaders: ['DPoP', proof], method: 'GET', url: `${origin}${basePath}${sent}` });
        expect(verdict).toMatchObject({ ok: true });
      }),
      { ...FC, numRuns: 300 },
    );
  });

  it('is refused by that check when a URL parser re-encoded the path sent (the htu of another path)', async () => {
    const prover = createDpopProver({ key: generateDpopKey(), clock: systemClock });
    const verifier = createDpopVerifier();
    await fc.assert(
      fc.asyncProperty(scheme, host, port, prefix, path, async (s, h, p, pre, target) => {
        const base = `${s}://${h}${p}${pre}`;
        const { origin, prefix: basePath } = gateway(base);
        const url = `${origin}${basePath}/api/v1${target}`;
        // Only where this Node's URL parser writes the path otherwise, save the case of %xx.
        fc.pre(
          new URL(url).pathname.replace(/%[0-9a-f]{2}/gi, (e) => e.toUpperCase()) !==
            `${basePath}/api/v1${target}`.replace(/%[0-9a-f]{2}/gi, (e) => e.toUpperCase()),
        );
        const verdict = await verifier.verify({ rawHeaders: ['DPoP', prover.proof('GET', whatwg(url))], method: 'GET', url });
        expect(verdict).toMatchObject({ ok: false, error: 'invalid_dpop_proof' });
      }),
      { ...FC, numRuns: 300 },
    );
  });
});
