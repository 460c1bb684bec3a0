import type { Config } from './config.js';

/**
 * Routes (docs/routes.md): several gateways behind one proxy, each with its own credential, listed
 * under `routes` in the configuration file. This file knows the syntax of a route: its name, the
 * keys it may set, how a caller reaches it, the paths it forwards. The loader (load.ts) reads each
 * route's settings over the top level's; what the routes mean together for the listeners is the
 * listener settings' check (app/listeners/listener-settings.ts).
 */

/** At most this many routes. */
export const MAX_ROUTES = 32;

/** A route's name: its metrics' `route` label, the word in its log lines and `check`'s output. */
export const ROUTE_NAME = /^[a-z0-9][a-z0-9-]{0,30}$/;

/** The name of the one route the top-level settings make when the file lists no routes. */
export const DEFAULT_ROUTE = 'default';

/** The gateway path prefixes a route forwards unless it names others: the Ticket Service's API. */
export const DEFAULT_PATHS: readonly string[] = ['/api/v1'];

/**
 * The settings a route may set for itself: its gateway and its credential. The top level's value
 * of each is every route's default; an environment variable sets only that default.
 */
export const ROUTE_SETTINGS: readonly (keyof Config)[] = [
  'baseUrl',
  'clientId',
  'clientSecret',
  'clientSecretFile',
  'tokenUrl',
  'issuerUrl',
  'tokenAuthMethod',
  'clientAssertionKeyFile',
  'clientAssertionKid',
  'clientAssertionAlg',
  'clientAssertionFile',
  'clientAssertionType',
  'tokenScope',
  'tokenParams',
  'dpop',
  'dpopKeyFile',
  'dpopAlg',
  'caFile',
  'tlsClientCertFile',
  'tlsClientKeyFile',
  'passthroughBasic',
  'tokenWaitTimeoutMs',
  'tokenFetchTimeoutMs',
  'upstreamTimeoutMs',
  'upstreamIdleTimeoutMs',
  'replayBodyLimitBytes',
  'tokenRefreshRatio',
  'tokenDefaultTtlS',
];

/** A route's own keys, never taken from the top level: its name, its paths, and its way in. */
export const ROUTE_OWN_KEYS = ['name', 'paths', 'mount', 'listenHost', 'listenPort', 'listenSocket', 'listenSocketMode'] as const;

/** How a caller reaches a route. */
export type RouteWay =
  /** The main listener's paths that no mount takes (at most one route). */
  | { readonly kind: 'main' }
  /** A path prefix on the main listener, removed before forwarding. */
  | { readonly kind: 'mount'; readonly mount: string }
  /** A TCP listener of its own. */
  | { readonly kind: 'port'; readonly host: string; readonly port: number }
  /** A Unix-domain socket of its own. */
  | { readonly kind: 'socket'; readonly path: string; readonly mode: string };

/** A route as its own keys describe it, before its settings are read. */
export interface RouteEntry {
  readonly name: string;
  readonly way: RouteWay;
  readonly paths: readonly string[];
}

/** A segment of a mount or a path: letters, digits, `-`, `.`, `_`, `~` (RFC 3986's unreserved characters), not `.` or `..`. */
const SEGMENT = /^[A-Za-z0-9._~-]+$/;

/**
 * Why `value` is not a plain path (`/` and one or more segments of unreserved characters, no `.`
 * or `..` segment, no percent sign, no trailing slash), or undefined when it is one.
 */
export function plainPathProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be a path such as /eu';
  if (!value.startsWith('/') || value === '/') return `must begin with "/" and name at least one segment (got "${value}")`;
  if (value.endsWith('/')) return `must not end with "/" (got "${value}")`;
  for (const segment of value.slice(1).split('/')) {
    if (segment === '') return `must not hold an empty segment ("//") (got "${value}")`;
    if (segment === '.' || segment === '..') return `must not hold a "." or ".." segment (got "${value}")`;
    if (!SEGMENT.test(segment)) {
      return `may hold only letters, digits, "-", ".", "_" and "~" between its slashes, no percent sign (got "${value}")`;
    }
  }
  return undefined;
}

/** Whether `inner` is `outer` or lies under it at a segment boundary (`/eu/x` under `/eu`, not `/eux`). */
export function isUnder(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(`${outer}/`);
}

/**
 * What the routes are together, for the syntax alone: names unique, at most one route without a
 * way in of its own, no mount inside another nor at or around a path of the main listener's route,
 * at most {@link MAX_ROUTES}. Each problem names `routes` and the route.
 */
export function routeSetProblems(entries: readonly RouteEntry[]): string[] {
  const problems: string[] = [];
  if (entries.length > MAX_ROUTES) problems.push(`routes lists ${entries.length} routes: at most ${MAX_ROUTES}`);
  const named = new Map<string, number>();
  for (const e of entries) named.set(e.name, (named.get(e.name) ?? 0) + 1);
  for (const [name, n] of named)
    if (n > 1) problems.push(`routes: the route name "${name}" is given ${n} times: each route has a name of its own`);
  const main = entries.filter((e) => e.way.kind === 'main');
  if (main.length > 1) {
    problems.push(
      `routes: ${main.map((e) => `"${e.name}"`).join(', ')} have no way in of their own: at most one route serves the main ` +
        "listener's paths; give the others a mount, a listenPort or a listenSocket",
    );
  }
  const mounts = entries.flatMap((e) => (e.way.kind === 'mount' ? [{ name: e.name, mount: e.way.mount }] : []));
  for (const a of mounts) {
    for (const b of mounts) {
      if (a === b || !isUnder(a.mount, b.mount) || (a.mount === b.mount && mounts.indexOf(a) < mounts.indexOf(b))) continue;
      problems.push(
        a.mount === b.mount
          ? `routes: "${b.name}" and "${a.name}" both mount ${a.mount}: give each route a mount of its own`
          : `routes: "${a.name}" mounts ${a.mount}, inside "${b.name}"'s mount ${b.mount}: a mount may not lie under another`,
      );
    }
  }
  // The main listener's route forwards its paths as they are: a mount at or around one of them
  // would take its requests to another gateway, on another credential.
  if (main.length === 1) {
    const [served] = main;
    for (const { name, mount } of mounts) {
      const shadowed = served!.paths.filter((path) => isUnder(path, mount) || isUnder(mount, path));
      if (shadowed.length > 0) {
        problems.push(
          `routes: "${name}" mounts ${mount}, over ${shadowed.join(', ')} that "${served!.name}" forwards on the main listener: ` +
            "choose a mount apart from the main route's paths",
        );
      }
    }
  }
  return problems;
}
