/**
 * The `htu` claim (RFC 9449 §4.2): the URI the request goes to, without query and fragment. A
 * server compares it with the URI it was reached at after syntax- and scheme-based normalisation
 * (RFC 9449 §4.3, RFC 3986 §6.2.2-6.2.3), so the proxy sends it already in the form a WHATWG URL
 * reading gives: scheme and host lower-case, the default port dropped, an IPv6 host in brackets,
 * and the characters a URL path may not hold raw percent-encoded.
 */

/** Characters a WHATWG URL path percent-encodes (its path percent-encode set), or removes (tab, LF, CR). */
// eslint-disable-next-line no-control-regex -- the set starts with the C0 controls
const PATH_ESCAPED = /[\x00-\x20"<>^`{}\x7f-\uffff]/;

function escapePath(path: string): string {
  let out = '';
  for (const ch of path) {
    const c = ch.codePointAt(0)!;
    if (c === 0x09 || c === 0x0a || c === 0x0d) continue;
    if (c < 0x80) out += PATH_ESCAPED.test(ch) ? `%${c.toString(16).toUpperCase().padStart(2, '0')}` : ch;
    else out += c >= 0xd800 && c <= 0xdfff ? '%EF%BF%BD' : encodeURIComponent(ch); // a lone surrogate reads as U+FFFD
  }
  return out;
}

/** The path of a request target: up to its query or fragment, escaped as a URL path would be. */
function pathOf(target: string): string {
  let end = target.length;
  const q = target.indexOf('?');
  if (q !== -1) end = q;
  const h = target.indexOf('#');
  if (h !== -1 && h < end) end = h;
  const path = end === target.length ? target : target.slice(0, end);
  return PATH_ESCAPED.test(path) ? escapePath(path) : path;
}

/**
 * The `htu` of every request forwarded to the gateway at `baseUrl`: returns a function taking the
 * request target as received (`/api/v1/tickets?state=open`) and giving scheme, host, port and
 * `BASE_URL`'s path prefix (without trailing slashes, as the configuration keeps it) followed by
 * the target's path, without query and fragment. The
 * prefix is worked out once; per request it is one concatenation. The target is the one the
 * path guard let through (origin-form, no dot segments, no backslash), which is sent as it is.
 */
export function gatewayHtu(baseUrl: string): (target: string) => string {
  const url = new URL(baseUrl);
  const prefix = `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
  return (target) => prefix + pathOf(target);
}

/** The `htu` of a request to an absolute URL (the token endpoint): its WHATWG reading without query and fragment. */
export function htuOf(target: string): string {
  const url = new URL(target);
  return `${url.protocol}//${url.host}${url.pathname}`;
}
