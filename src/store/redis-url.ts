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

/**
 * Parses `TOKEN_STORE_URL`: `redis://[user[:password]@]host[:port][/db]`, or `rediss://` for TLS;
 * with `cluster`, a comma-separated list of such URLs (the seed nodes, each written in full, all
 * with the same scheme, user and password, and no database). Returns the problems, each naming
 * `name`, and never the password.
 */
export function parseStoreUrl(value: string, mode: StoreMode, name: string): { endpoint?: StoreEndpoint; problems: string[] } {
  if (mode === 'standalone' && value.includes(',')) {
    return { problems: [`${name} names one server; a list of seed nodes needs TOKEN_STORE_MODE=cluster`] };
  }
  const parts = mode === 'cluster' ? value.split(',').map((p) => p.trim()) : [value.trim()];
  const problems: string[] = [];
  const urls: URL[] = [];
  for (const part of parts) {
    const shown = JSON.stringify(withoutUserinfo(part));
    let url: URL;
    try {
      url = new URL(part);
    } catch {
      problems.push(`${name} must be a URL such as redis://user@redis.example.com:6379 or rediss://... for TLS (got ${shown})`);
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
