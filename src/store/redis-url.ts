import { withoutUserinfo } from '../core/redact.js';

/** `TOKEN_STORE_MODE`. */
export type StoreMode = 'standalone' | 'cluster';

export interface StoreAddress {
  readonly host: string;
  readonly port: number;
}

/** Where the store is and who the proxy is to it, as `TOKEN_STORE_URL` says. */
export interface StoreEndpoint {
  readonly mode: StoreMode;
  /** `rediss:`: TLS, verified against the system roots and `CA_FILE`. */
  readonly tls: boolean;
  /** The server, or with `cluster` the seed nodes. */
  readonly nodes: readonly StoreAddress[];
  /** The ACL user; the `default` user when absent. */
  readonly username: string | undefined;
  /** The password written in the URL, if any. Never shown. */
  readonly urlPassword: string | undefined;
  /** The database number (standalone only). */
  readonly db: number;
  /** The URL as messages and logs show it: without the password. */
  readonly shown: string;
}

const DEFAULT_PORT = 6379;

function decode(part: string): string | undefined {
  try {
    return part === '' ? undefined : decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

/** A URL without its password, user kept: `redis://app@cache:6379`. */
function showUrl(url: URL): string {
  return `${url.protocol}//${url.username ? `${url.username}@` : ''}${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}

/** A URL's scheme and the slashes after it, as the redaction reads one (core/redact.ts). */
const SCHEME = /^[a-z][a-z0-9+.-]*:\/+/i;

/** A comma that begins another URL of a list: one followed by a scheme and its `//`. */
const NEXT_URL = /,(?=\s*[a-z][a-z0-9+.-]*:\/\/)/i;

/**
 * The characters a user name or password must percent-encode in a URL, as each is written
 * encoded: `/`, `?` and `#` end the authority (RFC 3986 §3.2), a `%` begins an encoded octet
 * (§2.1), and in a list of seed nodes a comma begins the next URL.
 */
const ENCODED: Readonly<Record<string, string>> = { '/': '%2F', '?': '%3F', '#': '%23', '%': '%25', ',': '%2C' };

/** The value as written: its URLs, and what their user information holds that must be encoded. */
interface WrittenList {
  /** The URLs, each trimmed; more than one where a comma separates them. */
  readonly urls: string[];
  /** The characters of {@link ENCODED} written unencoded in some URL's user information, in its order. */
  readonly unencoded: string[];
  /** The whole value as a message shows it: every URL's user information hidden. */
  readonly shown: string;
}

/**
 * Reads where each URL's user information ends before anything is split or shown, so that no
 * piece of a password reaches a message, wherever its writer put a comma, a `/` or an `@`. A
 * URL's user information runs up to the last `@` before the next URL's scheme, as a password may
 * hold an `@` (the URL parser reads it so); a comma after that `@` separates seed nodes, one
 * before it is the password's.
 */
function readList(value: string, mode: StoreMode): WrittenList {
  const chunks = value.split(NEXT_URL).map((c) => c.trim());
  const urls: string[] = [];
  const found = new Set<string>();
  for (const chunk of chunks) {
    const start = SCHEME.exec(chunk)?.[0].length ?? 0;
    const at = chunk.lastIndexOf('@');
    const hostAt = at < 0 ? start : at + 1;
    const userinfo = at < 0 ? '' : chunk.slice(start, at);
    const [first = '', ...more] = chunk.slice(hostAt).split(',');
    urls.push(`${chunk.slice(0, hostAt)}${first}`.trim(), ...more.map((u) => u.trim()));
    for (const c of ['/', '?', '#', ...(mode === 'cluster' ? [','] : [])]) if (userinfo.includes(c)) found.add(c);
    if (!decodes(userinfo)) found.add('%');
  }
  const unencoded = Object.keys(ENCODED).filter((c) => found.has(c));
  return { urls, unencoded, shown: JSON.stringify(chunks.map(withoutUserinfo).join(',')) };
}

function decodes(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The problem with a user name or password that holds a character it must encode: which ones,
 * how each is written, and the password file that needs no encoding. Never the password itself.
 */
function unencodedProblem(name: string, chars: readonly string[], shown: string): string {
  const named = chars.map((c) => `"${c}"`).join(' and ');
  const comma = chars.includes(',') ? '; with TOKEN_STORE_MODE=cluster a comma separates the seed nodes' : '';
  return (
    `${name} has an unencoded ${named} in its user information, before the "@" (got ${shown})${comma}: percent-encode ` +
    `${chars.length > 1 ? 'each' : 'it'} in the user name or password (${chars.map((c) => `"${c}" as ${ENCODED[c]}`).join(', ')}), ` +
    `or keep the password in TOKEN_STORE_PASSWORD_FILE and leave it out of the URL`
  );
}

/**
 * Parses `TOKEN_STORE_URL`: `redis://[user[:password]@]host[:port][/db]`, or `rediss://` for TLS;
 * with `cluster`, a comma-separated list of such URLs (the seed nodes, each written in full, all
 * with the same scheme, user and password, and no database). Returns the problems, each naming
 * `name`, and never the password: the user information is found before the list is split.
 */
export function parseStoreUrl(value: string, mode: StoreMode, name: string): { endpoint?: StoreEndpoint; problems: string[] } {
  const written = readList(value, mode);
  if (written.unencoded.length > 0) return { problems: [unencodedProblem(name, written.unencoded, written.shown)] };
  if (mode === 'standalone' && written.urls.length > 1) {
    return { problems: [`${name} names one server; a list of seed nodes needs TOKEN_STORE_MODE=cluster`] };
  }
  const problems: string[] = [];
  const urls: URL[] = [];
  for (const part of written.urls) {
    const shown = JSON.stringify(withoutUserinfo(part));
    let url: URL;
    try {
      url = new URL(part);
    } catch {
      problems.push(`${name} must be a URL such as redis://redis.example.com:6379 or rediss://... for TLS (got ${shown})`);
      continue;
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      problems.push(`${name} must begin with redis:// or rediss:// (got ${shown})`);
    } else if (url.hostname === '') {
      problems.push(`${name} must name a host (got ${shown})`);
    } else if (url.search !== '' || url.hash !== '') {
      problems.push(
        `${name} must not have a query or fragment (got ${shown}): the settings are TOKEN_STORE_MODE, TOKEN_STORE_PASSWORD_FILE, ...`,
      );
    } else if (!/^\/?(\d*)$/.test(url.pathname)) {
      problems.push(`${name} may end only in a database number, such as /0 (got ${shown})`);
    } else if (mode === 'cluster' && /^\/\d+$/.test(url.pathname) && url.pathname !== '/0') {
      problems.push(`${name} must not name a database with TOKEN_STORE_MODE=cluster: a cluster has only database 0 (got ${shown})`);
    } else {
      urls.push(url);
    }
  }
  if (problems.length > 0) return { problems };
  const first = urls[0]!;
  if (urls.some((u) => u.protocol !== first.protocol || u.username !== first.username || u.password !== first.password)) {
    return { problems: [`${name} lists seed nodes with different schemes, users or passwords: write every one in full, alike`] };
  }
  const db = Number(/^\/(\d+)$/.exec(first.pathname)?.[1] ?? 0);
  if (!Number.isSafeInteger(db)) return { problems: [`${name} names a database number out of range`] };
  return {
    problems: [],
    endpoint: {
      mode,
      tls: first.protocol === 'rediss:',
      // A URL's hostname keeps an IPv6 address in brackets; a socket wants it bare.
      nodes: urls.map((u) => ({ host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port === '' ? DEFAULT_PORT : Number(u.port) })),
      username: decode(first.username),
      urlPassword: decode(first.password),
      db,
      shown: urls.map(showUrl).join(','),
    },
  };
}
