/**
 * Path guard, differential (docs/forwarding.md, "What is forwarded"): whatever the guard forwards, every common reader
 * of a path reads the path the proxy sent; whatever it refuses, one named property made it
 * dangerous. Targets are built from the nasty shapes: mixed case and mixed encodings of dots
 * and slashes, `;params`, overlong UTF-8, `%u` escapes, tabs, `#`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkTarget } from '../../src/proxy/path-guard.js';
import { FC } from './budget.js';

/** Bytes Node's HTTP parser (llhttp, strict) accepts in a request target: visible ASCII. */
const WIRE = /^[\x21-\x7e]*$/;

/** One path segment made of the shapes servers disagree on. */
const segment = fc
  .array(
    fc.oneof(
      fc.constantFrom('.', '..', '%2e', '%2E', '%2e%2e', '.%2e', '%2e.', '%c0%ae', '%e0%80%ae', '%u002e', '%U002E', '%252e'),
      fc.constantFrom(
        '%2f',
        '%2F',
        '%5c',
        '%5C',
        '\\',
        '%00',
        '%25',
        '%',
        '%g1',
        '%a',
        ';',
        ';x=1',
        ';.',
        '\t',
        '#',
        '?',
        '%23',
        '%3f',
        '%3b',
      ),
      fc.constantFrom(
        'oauth2',
        'OAUTH2',
        'oauth2;v=1',
        'OAuth2;',
        'oauth%32',
        '%6fauth2',
        'token',
        'tickets',
        'api',
        'v1',
        'a',
        'b-c',
        '~u',
        'é',
        '%c3%a9',
        '%41',
      ),
      fc.string({ minLength: 1, maxLength: 3, unit: fc.constantFrom(..."aZ09._-~!$&'()*+,=:@") }),
    ),
    { minLength: 0, maxLength: 4 },
  )
  .map((parts) => parts.join(''));

/** A target: mostly under /api/v1, sometimes a near miss of the prefix, sometimes no leading slash. */
const target = fc
  .tuple(
    fc.constantFrom(
      '/api/v1',
      '/api/v1',
      '/api/v1',
      '/API/v1',
      '/api/v1%2f',
      '/api/v2',
      '/api',
      '',
      'http://h/api/v1',
      '//api/v1',
      '/api/./v1',
    ),
    fc.array(segment, { minLength: 0, maxLength: 5 }),
    fc.constantFrom('', '/', '?q=1', '?a=../../x%2f#', '#frag', '?'),
  )
  .map(([prefix, segs, tail]) => prefix + segs.map((s) => `/${s}`).join('') + tail);

/** Percent-decodes `%XX` escapes to bytes and reads them as UTF-8 (invalid sequences become U+FFFD). */
function percentDecode(s: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '%' && /^[0-9a-fA-F]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(s[i]!, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * Dot segments and duplicate slashes resolved the way nginx (`merge_slashes on`) and Go's
 * `path.Clean` resolve them; a trailing slash is kept, as Go's `net/http` keeps it.
 */
function cleanPath(p: string): string {
  const out: string[] = [];
  const segs = p.split('/').slice(1);
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i]!;
    const last = i === segs.length - 1;
    if (s === '.' || (s === '' && !last)) continue;
    if (s === '..') out.pop();
    else out.push(s);
    if (last && (s === '.' || s === '..')) out.push('');
  }
  if (segs.length > 0 && segs[segs.length - 1] === '' && out[out.length - 1] !== '') out.push('');
  return `/${out.join('/')}`;
}

/** nginx: decodes every escape, then merges slashes and resolves dot segments. */
const nginx = (path: string): string => cleanPath(percentDecode(path));
/** Go `net/http`: the same on the decoded path (`URL.Path`), then `path.Clean`. */
const goClean = (path: string): string => cleanPath(percentDecode(path));
/** Servlet containers: `;params` dropped from each segment, then decoded and cleaned. */
const servlet = (path: string): string => cleanPath(percentDecode(path.replace(/;[^/]*/g, '')));
/** The WHATWG URL parser (browsers, Node's `URL`, undici), decoded for comparison. */
const whatwg = (target: string): string => percentDecode(new URL(target, 'http://proxy.invalid').pathname);

function pathOf(target: string): string {
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
}

/** Under /api/v1 (as written) and not at or under the token endpoint (in any letter case). */
function allowedPlace(decoded: string): boolean {
  return (decoded === '/api/v1' || decoded.startsWith('/api/v1/')) && !/^\/api\/v1\/oauth2(?:[/;]|$)/i.test(decoded);
}

/** The property of a refused target that made it dangerous, by the guard's own rules. */
function danger(target: string): string | undefined {
  if (!target.startsWith('/')) return 'not origin-form';
  const path = pathOf(target);
  if (path.includes('\\')) return 'raw backslash';
  if (/%(?:2f|5c|00)/i.test(path)) return 'encoded slash, backslash or NUL';
  if (/%(?![0-9a-fA-F]{2})/.test(path)) return 'malformed percent-encoding';
  const segs = path.split('/');
  if (segs.slice(1).some((s) => /^(?:\.|%2e){1,2}(?:;.*)?$/i.test(s))) return 'dot segment, raw or encoded';
  if (segs.slice(1, -1).includes('')) return 'empty segment (a normaliser merges "//")';
  const decoded = percentDecode(path);
  if (!allowedPlace(decoded)) return 'outside /api/v1 or at the token endpoint';
  return undefined;
}

describe('path guard, differential against common normalisers', () => {
  it('every target it forwards reads as the same path to the WHATWG parser, nginx, Go and servlet containers', () => {
    fc.assert(
      fc.property(target, (t) => {
        // Targets the HTTP parser refuses never reach the guard (raw-socket fuzz checks the 400),
        // and a raw "#" has its own rule below.
        fc.pre(WIRE.test(t) && !t.includes('#'));
        if (checkTarget(t) !== undefined) return;
        const path = pathOf(t);
        const decoded = percentDecode(path);
        expect(whatwg(t)).toBe(decoded);
        expect(nginx(path)).toBe(decoded);
        expect(goClean(path)).toBe(decoded);
        expect(allowedPlace(servlet(path))).toBe(true);
        expect(allowedPlace(decoded)).toBe(true);
      }),
      FC,
    );
  });

  it('every target it refuses has a named dangerous property, and the refusal names the rule', () => {
    fc.assert(
      fc.property(target, (t) => {
        fc.pre(WIRE.test(t) && !t.includes('#'));
        const refused = checkTarget(t);
        if (refused === undefined) return;
        const why = danger(t);
        expect(why, `refused ${JSON.stringify(t)} with no dangerous property`).toBeDefined();
        expect(['bad_path', 'not_proxied']).toContain(refused.code);
        if (why === 'outside /api/v1 or at the token endpoint') expect(refused.code).toBe('not_proxied');
        else expect(refused.code).toBe('bad_path');
      }),
      FC,
    );
  });

  it('a forwarded target and a refused one differ in some rule: no forwarded target has a dangerous property', () => {
    fc.assert(
      fc.property(target, (t) => {
        fc.pre(WIRE.test(t) && !t.includes('#'));
        if (checkTarget(t) === undefined) expect(danger(t)).toBeUndefined();
      }),
      FC,
    );
  });

  it('an escape that is not UTF-8 elsewhere in the path does not hide the token endpoint', () => {
    expect(checkTarget('/api/v1/oauth%32/token%ff')?.code).toBe('not_proxied');
    expect(checkTarget('/api/v1/%6fauth2/%c0%ae')?.code).toBe('not_proxied');
  });

  // A raw "#" ends the path for the WHATWG parser (everything after it is a fragment a client
  // never sends), so the gateway's framework and the proxy would read different paths:
  // the rule is that any raw "#" in a target is refused with 400 bad_path.
  it('a raw "#" anywhere in the target is refused with bad_path', () => {
    fc.assert(
      fc.property(target, (t) => {
        fc.pre(WIRE.test(t) && t.includes('#') && t.startsWith('/'));
        expect(checkTarget(t)?.code).toBe('bad_path');
      }),
      FC,
    );
  });
});
