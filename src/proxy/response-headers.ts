import { connectionNamed, HOP_BY_HOP, withoutNamed } from './hop-by-hop.js';

/**
 * The gateway's answer headers on their way back to the caller (docs/forwarding.md, "Headers"):
 * less hop-by-hop ones, names in the letter case the gateway sent, a `Location` into the gateway
 * rewritten to the origin the caller used.
 */

const DROP_RESPONSE = new Set([...HOP_BY_HOP, 'proxy-authenticate']);

/** Response headers as undici's parser hands them over: a flat `[name, value, ...]` list of bytes. */
export type RawHeaders = readonly (Buffer | string)[];

/** The header object undici parses from the same raw list: lower-case names, values converted. */
export type ParsedHeaders = Record<string, string | string[] | undefined>;

const latin1 = (b: Buffer | string): string => (typeof b === 'string' ? b : b.toString('latin1'));

/** At most this many header positions are remembered. */
const NAME_SLOTS = 64;

/**
 * The gateway's header names as last seen, by position, with their lower-case forms: it sends the
 * same names in the same order answer after answer, so a name whose bytes match the one seen at
 * its place is not converted again. Built once by the forwarder and handed to every answer it
 * forwards; bounded by the position (at most NAME_SLOTS entries).
 */
export class SeenHeaderNames {
  readonly names: string[] = [];
  readonly lower: string[] = [];
}

function sameBytes(bytes: Buffer, text: string): boolean {
  if (bytes.length !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[i] !== text.charCodeAt(i)) return false;
  return true;
}

/** The gateway an answer comes from, as its headers are rewritten (a route is one). */
export interface AnsweringGateway {
  /** The gateway's base URL (`BASE_URL` without its trailing slash): a `Location` into it is rewritten. */
  readonly baseUrl: string;
  /** The gateway's header names as last seen, when kept. */
  readonly seenNames?: SeenHeaderNames | undefined;
  /** The gateway path prefixes its route forwards: a relative `Location` under one of them gets the caller's mount in front. */
  readonly paths?: { readonly prefixes: readonly string[] } | undefined;
}

/** Where the caller is: the origin it used, and the mount its request came through. */
export interface CallerPlace {
  /** `http://` + its `Host`, or `''` for an absolute path (a caller on a Unix socket). */
  readonly origin: string;
  /** The mount its route is reached through (`/eu`), or `''`. */
  readonly mount: string;
}

/** The caller of a request on a listener's own route, no mount, no origin known: for an answer without a `Location`. */
export const NOWHERE: CallerPlace = { origin: '', mount: '' };

/**
 * The headers to send back: the gateway's, less hop-by-hop ones, with a `Location` that points
 * into the gateway rewritten to the origin the caller used. Built from the raw list undici's
 * parser keeps, so names keep the letter case the gateway sent (legacy code looks them up
 * case-sensitively) and repeated fields their order. A value sent once is taken from `parsed`,
 * where undici has already converted it, rather than converted a second time; a name seen at its
 * place in an earlier answer is taken from the gateway's `seenNames`, when kept. `caller` says
 * where a rewritten `Location` points.
 */
export function callerResponseHeaders(raw: RawHeaders, gateway: AnsweringGateway, caller: CallerPlace, parsed?: ParsedHeaders): string[] {
  const seen = gateway.seenNames;
  const out: string[] = [];
  let connection: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const bytes = raw[i]!;
    const slot = i >> 1;
    let name: string;
    let lower: string;
    if (
      seen !== undefined &&
      slot < seen.names.length &&
      (typeof bytes === 'string' ? bytes === seen.names[slot] : sameBytes(bytes, seen.names[slot]!))
    ) {
      name = seen.names[slot]!;
      lower = seen.lower[slot]!;
    } else {
      name = latin1(bytes);
      lower = name.toLowerCase();
      if (seen !== undefined && slot <= seen.names.length && slot < NAME_SLOTS) {
        seen.names[slot] = name;
        seen.lower[slot] = lower;
      }
    }
    const single = parsed?.[lower];
    const value = typeof single === 'string' ? single : latin1(raw[i + 1]!);
    if (DROP_RESPONSE.has(lower)) {
      if (lower === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
      continue;
    }
    out.push(name, lower === 'location' ? rewriteLocation(value, gateway, caller) : value);
  }
  // The usual values name no other field: read without a call.
  const named = connection === undefined || connection === 'keep-alive' || connection === 'close' ? undefined : connectionNamed(connection);
  return named === undefined ? out : withoutNamed(out, named);
}

/** A parsed header object as a flat list (for a dispatcher that keeps no raw list). */
export function flatHeaders(parsed: ParsedHeaders): string[] {
  const out: string[] = [];
  for (const name in parsed) {
    const value = parsed[name];
    if (Array.isArray(value)) for (const v of value) out.push(name, v);
    else if (value !== undefined) out.push(name, value);
  }
  return out;
}

/**
 * `{baseUrl}/x` becomes `{origin}{mount}/x`, and an absolute path `{base path}/x` becomes
 * `{mount}/x` (RFC 9110 §10.2.2 allows a relative Location; the caller resolves it against the
 * proxy); behind a mount, an absolute path under one of the route's paths (`/api/v1/x`, the base
 * URL having no path) becomes `{mount}/api/v1/x`. Any other location is left alone. An empty
 * origin makes every rewritten location an absolute path (a caller on a Unix socket).
 */
export function rewriteLocation(location: string, gateway: AnsweringGateway, caller: CallerPlace): string {
  const { baseUrl } = gateway;
  const { origin, mount } = caller;
  if (location.charCodeAt(0) === 47 /* / */ && location.charCodeAt(1) !== 47) {
    const slash = baseUrl.indexOf('/', baseUrl.indexOf('//') + 2);
    const basePath = slash === -1 ? '' : baseUrl.slice(slash);
    if (basePath === '') return mount !== '' && underPaths(location, gateway) ? mount + location : location;
    const rest = location.startsWith(basePath) ? location.slice(basePath.length) : undefined;
    if (rest === undefined || (rest !== '' && rest[0] !== '/' && rest[0] !== '?' && rest[0] !== '#')) return location;
    return mount + (rest[0] === '/' ? rest : `/${rest}`);
  }
  if (location.length < baseUrl.length || location.slice(0, baseUrl.length).toLowerCase() !== baseUrl.toLowerCase()) {
    return location;
  }
  const rest = location.slice(baseUrl.length);
  if (rest !== '' && rest[0] !== '/' && rest[0] !== '?' && rest[0] !== '#') return location;
  return origin + mount + (rest[0] === '/' ? rest : `/${rest}`);
}

/** Whether an absolute path lies at or under one of the gateway's route's paths. */
function underPaths(location: string, gateway: AnsweringGateway): boolean {
  const end = location.search(/[?#]/);
  const path = end === -1 ? location : location.slice(0, end);
  return (gateway.paths?.prefixes ?? []).some((p) => path === p || path.startsWith(`${p}/`));
}
