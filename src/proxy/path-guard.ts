import { BadPathError, NotProxiedError, type ProxyError } from '../core/errors.js';

/** The gateway path prefixes a route forwards (`/api/v1` unless it names others), read once. */
export interface ForwardedPaths {
  readonly prefixes: readonly string[];
  /** What a request outside them is told: the paths that are forwarded. */
  readonly outside: NotProxiedError;
}

/** The paths a route forwards, as {@link checkTarget} reads them: prefixes without a trailing slash (`/api/v1`). */
export function forwardedPaths(prefixes: readonly string[]): ForwardedPaths {
  const named = prefixes.map((p) => `${p}/`);
  const list = named.length === 1 ? named[0]! : `${named.slice(0, -1).join(', ')} and ${named.at(-1)!}`;
  return { prefixes: [...prefixes], outside: new NotProxiedError(`only paths under ${list} are forwarded`) };
}

/** What a route forwards unless it names other paths: the Ticket Service's `/api/v1`. */
export const DEFAULT_PATHS: ForwardedPaths = forwardedPaths(['/api/v1']);

/** The token endpoint under a prefix belongs to the proxy. */
const TOKEN_ENDPOINT_REFUSED = new NotProxiedError('the token endpoint is not forwarded: the proxy obtains tokens itself');

/**
 * Checks a request target against the forwarding rules and the paths a route forwards. Returns the
 * error to answer with, or undefined when the target is forwarded as it is. The proxy never
 * rewrites a path: anything a server on the way could read as another path is refused instead.
 */
export function checkTarget(target: string, paths: ForwardedPaths = DEFAULT_PATHS): ProxyError | undefined {
  if (target.charCodeAt(0) !== 47 /* / */) {
    return new BadPathError('only origin-form request targets (starting with "/") are forwarded');
  }
  // A fragment is never sent (RFC 9110 §7.1); a gateway's URL parser would cut the path at it
  // (`/api/v1/oauth2#/token` read as `/api/v1/oauth2`), so a raw `#` anywhere, query included, is refused.
  if (target.includes('#')) return new BadPathError('"#" in the request target (send it percent-encoded as %23)');
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  const bad = badPathReason(path);
  if (bad !== undefined) return new BadPathError(bad);
  const prefix = prefixOf(path, paths.prefixes);
  if (prefix === undefined) return paths.outside;
  // The token endpoint belongs to the proxy: compare decoded and case-folded, as a server might,
  // and without the ";params" some servers drop from a segment (`/oauth2;x/token`).
  if (/^oauth2(?:[/;]|$)/.test(decodeForCompare(path.slice(prefix.length + 1)))) return TOKEN_ENDPOINT_REFUSED;
  return undefined;
}

/** The prefix `path` is at or under (at a segment boundary), or undefined. */
function prefixOf(path: string, prefixes: readonly string[]): string | undefined {
  for (let i = 0; i < prefixes.length; i++) {
    const prefix = prefixes[i]!;
    if (path.length === prefix.length ? path === prefix : path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47) return prefix;
  }
  return undefined;
}

/** Why `path` could be read as another path, or undefined when it cannot. */
function badPathReason(path: string): string | undefined {
  // Fast path: nothing but unreserved characters and single slashes, no dot segments.
  if (/^(?:\/[A-Za-z0-9_~-]+(?:\.[A-Za-z0-9_~-]+)*)*\/?$/.test(path)) return undefined;
  if (path.includes('\\')) return 'backslash in path';
  if (/%(?:2f|5c|00)/i.test(path)) return 'encoded slash, backslash or NUL in path';
  if (/%(?![0-9a-fA-F]{2})/.test(path)) return 'malformed percent-encoding in path';
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i]!;
    // Dot segments, raw or encoded, and their ";params" form that some servers also resolve.
    if (/^(?:\.|%2e){1,2}(?:;.*)?$/i.test(s)) return 'dot segment in path';
    if (s === '' && i < segments.length - 1) return 'empty segment ("//") in path';
  }
  return undefined;
}

function decodeForCompare(s: string): string {
  try {
    return decodeURIComponent(s).toLowerCase();
  } catch {
    // Not UTF-8 somewhere (`%ff`, overlong `%c0%ae`): still decode each escape, as a server would.
    return s.replace(/%[0-9a-fA-F]{2}/g, (e) => String.fromCharCode(parseInt(e.slice(1), 16))).toLowerCase();
  }
}
