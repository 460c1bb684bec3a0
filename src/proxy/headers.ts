import type { Authorization } from '../token/authorization.js';

/**
 * Header rules in both directions (docs/forwarding.md, "Headers"). Headers travel as flat raw lists
 * (`[name, value, name, value, ...]`) both ways, so names keep their case and repeated fields
 * their order.
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1): never forwarded in either direction. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

/** Plus the caller's credentials and what the proxy sets or handles itself (`Expect`: the proxy sends `100 Continue` itself). */
const DROP_REQUEST = new Set([...HOP_BY_HOP, 'proxy-authorization', 'authorization', 'dpop', 'host', 'expect', 'http2-settings']);

const DROP_RESPONSE = new Set([...HOP_BY_HOP, 'proxy-authenticate']);

/** What the forwarder needs to know of a request, read in the same pass as its headers. */
export interface RequestHeaders {
  /** The caller's headers to send upstream, as a flat raw list; the proxy's `Authorization` goes last. */
  forward: string[];
  /** `Content-Length` as sent, when sent. */
  contentLength: string | undefined;
  /** A `Transfer-Encoding` was sent: the request has a body of unknown length. */
  transferEncoding: boolean;
  /** A body follows the head (RFC 9112 §6.3): a `Content-Length` other than 0, or a `Transfer-Encoding`. */
  hasBody: boolean;
  /** `Host` as sent, when sent (for rewriting a `Location`). */
  host: string | undefined;
  /**
   * The protocols of an upgrade request (`Upgrade` with `Connection: upgrade`) other than an
   * `h2c` offer, which is ignored as RFC 9110 §7.8 allows; undefined when there are none.
   */
  upgrade: string | undefined;
}

/**
 * Reads the caller's raw headers once: what goes upstream (less hop-by-hop headers and the
 * caller's credentials; `Host` is left to the client, which sets the gateway's) and the facts
 * the forwarder needs, without building Node's `req.headers` object.
 */
export function readRequestHeaders(raw: readonly string[]): RequestHeaders {
  const forward: string[] = [];
  let contentLength: string | undefined;
  let transferEncoding = false;
  let host: string | undefined;
  let connection: string | undefined;
  let upgrade: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (!DROP_REQUEST.has(lower)) {
      if (lower === 'content-length') contentLength = value;
      forward.push(name, value);
    } else if (lower === 'transfer-encoding') transferEncoding = true;
    else if (lower === 'host') host ??= value;
    else if (lower === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
    else if (lower === 'upgrade') upgrade = upgrade === undefined ? value : `${upgrade},${value}`;
  }
  const named = connection === undefined ? undefined : connectionNamed(connection);
  if (upgrade !== undefined && (named === undefined || !named.has('upgrade') || isH2cOffer(upgrade))) upgrade = undefined;
  const hasBody = (contentLength !== undefined && contentLength !== '0') || transferEncoding;
  return {
    forward: named === undefined ? forward : without(forward, named, true),
    contentLength,
    transferEncoding,
    hasBody,
    host,
    upgrade,
  };
}

/** `Upgrade: h2c` (every protocol offered is h2c): HTTP/2 over cleartext, which the proxy ignores. */
function isH2cOffer(value: string): boolean {
  for (const token of value.split(',')) {
    const t = token.trim().toLowerCase();
    if (t !== '' && t !== 'h2c') return false;
  }
  return true;
}

/** Fields a `Connection` header names (RFC 9110 §7.6.1), lower-cased; none for the usual values. */
function connectionNamed(value: string): Set<string> | undefined {
  if (value === 'keep-alive' || value === 'close') return undefined;
  let named: Set<string> | undefined;
  for (const token of value.split(',')) {
    const t = token.trim().toLowerCase();
    if (t !== '' && t !== 'keep-alive' && t !== 'close') (named ??= new Set()).add(t);
  }
  return named;
}

/**
 * Puts the proxy's credentials on a forwarded request's raw header list, whose last pair is the
 * proxy's `Authorization`: its value, and for a DPoP-bound token a fresh `DPoP` proof in the pair
 * just before it (RFC 9449 §7.1), made for the request's method and target. `hasProof` tells
 * whether the list carries a proof from an earlier send (a replay); returns whether it carries one
 * now. A Bearer token costs one assignment.
 */
export function setAuthorization(headers: string[], auth: Authorization, method: string, target: string, hasProof: boolean): boolean {
  const n = headers.length;
  headers[n - 1] = auth.header;
  if (auth.proof === undefined) {
    // A replay whose new token came back Bearer: the old proof goes.
    if (hasProof) headers.splice(n - 4, 2);
    return false;
  }
  const proof = auth.proof(method, target);
  if (hasProof) headers[n - 3] = proof;
  else headers.splice(n - 2, 0, 'dpop', proof);
  return true;
}

/** A flat header list less the named fields. */
function without(list: readonly string[], named: Set<string>, lowerCase: boolean): string[] {
  const kept: string[] = [];
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    if (!named.has(lowerCase ? name.toLowerCase() : name)) kept.push(list[i]!, list[i + 1]!);
  }
  return kept;
}

/** Response headers as undici's parser hands them over: a flat `[name, value, ...]` list of bytes. */
export type RawHeaders = readonly (Buffer | string)[];

const latin1 = (b: Buffer | string): string => (typeof b === 'string' ? b : b.toString('latin1'));

/**
 * The gateway's header names as last seen, by position, with their lower-case forms: it sends the
 * same names in the same order answer after answer, so a name whose bytes match the one seen at
 * its place is not converted again. Bounded by the position (at most NAME_SLOTS entries).
 */
const seenNames: string[] = [];
const seenLower: string[] = [];
const NAME_SLOTS = 64;

function sameBytes(bytes: Buffer, text: string): boolean {
  if (bytes.length !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[i] !== text.charCodeAt(i)) return false;
  return true;
}

/** The header object undici parses from the same raw list: lower-case names, values converted. */
export type ParsedHeaders = Record<string, string | string[] | undefined>;

/**
 * The headers to send back: the gateway's, less hop-by-hop ones, with a `Location` that points
 * into the gateway rewritten to the origin the caller used. Built from the raw
 * list undici's parser keeps, so names keep the letter case the gateway sent (legacy code looks
 * them up case-sensitively) and repeated fields their order. A value sent once is taken from
 * `parsed`, where undici has already converted it, rather than converted a second time.
 */
export function callerResponseHeaders(raw: RawHeaders, baseUrl: string, callerOrigin: string, parsed?: ParsedHeaders): string[] {
  const out: string[] = [];
  let connection: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const bytes = raw[i]!;
    const slot = i >> 1;
    let name: string;
    let lower: string;
    if (slot < seenNames.length && (typeof bytes === 'string' ? bytes === seenNames[slot] : sameBytes(bytes, seenNames[slot]!))) {
      name = seenNames[slot]!;
      lower = seenLower[slot]!;
    } else {
      name = latin1(bytes);
      lower = name.toLowerCase();
      if (slot <= seenNames.length && slot < NAME_SLOTS) {
        seenNames[slot] = name;
        seenLower[slot] = lower;
      }
    }
    const single = parsed?.[lower];
    const value = typeof single === 'string' ? single : latin1(raw[i + 1]!);
    if (DROP_RESPONSE.has(lower)) {
      if (lower === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
      continue;
    }
    out.push(name, lower === 'location' ? rewriteLocation(value, baseUrl, callerOrigin) : value);
  }
  const named = connection === undefined ? undefined : connectionNamed(connection);
  return named === undefined ? out : without(out, named, true);
}

/** A parsed header object as a flat list (for a dispatcher that keeps no raw list). */
export function flatHeaders(parsed: Record<string, string | string[] | undefined>): string[] {
  const out: string[] = [];
  for (const name in parsed) {
    const value = parsed[name];
    if (Array.isArray(value)) for (const v of value) out.push(name, v);
    else if (value !== undefined) out.push(name, value);
  }
  return out;
}

/**
 * `{baseUrl}/x` becomes `{callerOrigin}/x`, and an absolute path `{base path}/x` becomes `/x`
 * (RFC 9110 §10.2.2 allows a relative Location; the caller resolves it against the proxy);
 * any other location is left alone. An empty `callerOrigin` makes every rewritten location an
 * absolute path (a caller on a Unix socket).
 */
export function rewriteLocation(location: string, baseUrl: string, callerOrigin: string): string {
  if (location.charCodeAt(0) === 47 /* / */ && location.charCodeAt(1) !== 47) {
    const slash = baseUrl.indexOf('/', baseUrl.indexOf('//') + 2);
    if (slash === -1) return location;
    const basePath = baseUrl.slice(slash);
    const rest = location.startsWith(basePath) ? location.slice(basePath.length) : undefined;
    if (rest === undefined || (rest !== '' && rest[0] !== '/' && rest[0] !== '?' && rest[0] !== '#')) return location;
    return rest[0] === '/' ? rest : `/${rest}`;
  }
  if (location.length < baseUrl.length || location.slice(0, baseUrl.length).toLowerCase() !== baseUrl.toLowerCase()) {
    return location;
  }
  const rest = location.slice(baseUrl.length);
  if (rest !== '' && rest[0] !== '/' && rest[0] !== '?' && rest[0] !== '#') return location;
  return callerOrigin + (rest[0] === '/' ? rest : `/${rest}`);
}
