import { ConfigError } from '../core/errors.js';
import { redactUserinfo } from '../core/redact.js';
import { unreadableFileProblem } from '../core/unreadable.js';
import { SETTINGS, type Config, type Setting } from './config.js';
import { editDistance, nearestSetting } from './near-miss.js';
import {
  DEFAULT_PATHS,
  DEFAULT_ROUTE,
  plainPathProblem,
  ROUTE_NAME,
  ROUTE_OWN_KEYS,
  ROUTE_SETTINGS,
  routeSetProblems,
  type RouteEntry,
  type RouteWay,
} from './routes.js';
import { FILE_KEY_GROUPS } from './tracing.js';
import { checkUrl, parseValue } from './values.js';
import type { RefusedKey } from './yaml-file.js';

export interface ConfigSources {
  /** The environment (only variables named in {@link SETTINGS} are read). */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * The parsed YAML file, when there is one, and its path for messages; with what reading it
   * found (yaml-file.ts): keys refused as written, problems of no setting, warnings.
   */
  file?:
    | {
        path: string;
        values: unknown;
        refused?: readonly RefusedKey[];
        problems?: readonly string[];
        warnings?: readonly string[];
      }
    | undefined;
  /** Reads a file a setting names (secret, key, certificate); injected so tests need no files. Throws when unreadable. */
  readFile: (path: string) => string;
  /** Reads a file of raw bytes (key material); without it, `readFile`'s text as UTF-8. Throws when unreadable. */
  readBytes?: (path: string) => Uint8Array;
}

/**
 * What a feature's check of its own settings sees: the parsed settings, where each came from,
 * and a place to record problems. Every problem of every check is reported together.
 */
export interface SettingsCheckContext {
  /** The settings as parsed; a refused value reads as its default, or undefined. */
  readonly config: Config;
  /** The routes as their own keys describe them (their names, ways in and paths). */
  readonly routes: readonly RouteEntry[];
  /** Whether the setting was given at all (in the environment or the file), even if refused. */
  given(key: keyof Config): boolean;
  /** The setting as a message names it: `CA_FILE`, or `caFile in /etc/proxy.yaml (CA_FILE)`. */
  name(key: keyof Config): string;
  /**
   * The start of a message about two settings that may not be set together, saying where each
   * came from: `A and B are both set (A from the environment, B from b in /etc/proxy.yaml)`, or,
   * while B is not given, `A is set (A from the environment)`.
   */
  bothSet(a: keyof Config, b: keyof Config): string;
  /** Records a problem; it names its setting and never shows a secret or a file's content. */
  problem(message: string): void;
  /** Records a warning about `key`'s value: taken, but likely not what was meant (said at start and by `check`). */
  warn(key: keyof Config, message: string): void;
  /** Reads the file the setting names (once, however often asked); when it cannot be read, records the problem and returns undefined. */
  readFile(key: keyof Config): string | undefined;
  /** The same, as bytes: for key material, which need not be text. */
  readBytes(key: keyof Config): Uint8Array | undefined;
}

/** A feature's check of its settings; what it returns (the files it read, parsed) is handed on. */
export type SettingsCheck<T = unknown> = (context: SettingsCheckContext) => T;

/** The configuration and what each check returned, under the check's name. */
export interface Loaded<C extends Record<string, SettingsCheck>, R extends Record<string, SettingsCheck> = Record<never, never>> {
  /** The top-level settings: the whole proxy's, and every route's defaults. */
  readonly config: Config;
  readonly checked: { readonly [K in keyof C]: ReturnType<C[K]> };
  /** The routes, at least one: without `routes` in the file, the top-level settings as the route `default`. */
  readonly routes: readonly LoadedRoute<R>[];
  /** What the checks warned of, each naming its setting. */
  readonly warnings: readonly ConfigWarning[];
}

/** A value taken that is likely a mistake: the setting's env name and what to say. */
export interface ConfigWarning {
  readonly setting: string;
  readonly message: string;
}

/**
 * The loader's refusal: every problem, with what it would have warned of beside them (said with
 * the problems, not after they are fixed) and the settings as far as they could be read (a
 * refused value reads as its default), for what the start examines beyond them.
 */
export class SettingsRefused extends ConfigError {
  declare readonly warnings: readonly ConfigWarning[];
  /** Not enumerable: it holds the secret, and a logger's error serializer copies what is. */
  declare readonly config: Config;
  constructor(problems: readonly string[], warnings: readonly ConfigWarning[], config: Config) {
    super(problems);
    Object.defineProperty(this, 'warnings', { value: warnings, enumerable: false });
    Object.defineProperty(this, 'config', { value: config, enumerable: false });
  }
}

const BY_KEY = new Map(SETTINGS.map((s) => [s.key as string, s]));

interface Given {
  value: unknown;
  /** The env name it was read from, or `key in /path` for the file. */
  from: string;
  inFile: boolean;
  /** Refused as written in the file (an unresolved tag or alias): given, but not parsed. */
  refused?: boolean;
}

/** Reads the file's settings into `raw`; returns its `routes`, when it lists any (routes.ts). */
function fileValues(file: NonNullable<ConfigSources['file']>, raw: Map<string, Given>, problems: string[]): unknown {
  const { path, values } = file;
  let routes: unknown;
  problems.push(...(file.problems ?? []));
  const refusals = new Map<string, RefusedKey[]>();
  for (const r of file.refused ?? []) refusals.set(r.key, [...(refusals.get(r.key) ?? []), r]);
  const refuse = (shown: string, env: string | undefined): void => {
    for (const r of refusals.get(shown) ?? [])
      problems.push(`${shown} in ${path}${env === undefined ? '' : ` (${env})`}, line ${r.line}: ${r.reason}`);
    refusals.delete(shown);
  };
  if (values !== null && values !== undefined && (typeof values !== 'object' || Array.isArray(values))) {
    problems.push(`${path} must hold a YAML mapping of settings (got ${Array.isArray(values) ? 'a list' : typeof values})`);
    return undefined;
  }
  for (const [key, value, shown] of withGroupsOpened((values ?? {}) as Record<string, unknown>)) {
    const setting = BY_KEY.get(key);
    if (key === 'routes') {
      routes = value;
    } else if (!setting) {
      const near = nearestSetting(key);
      const hint = near === undefined || near.envOnly ? '' : `; did you mean ${near.key}?`;
      problems.push(`${shown} in ${path} is not a setting${hint} (keys are lower camelCase, e.g. baseUrl, clientSecretFile)`);
    } else if (setting.envOnly) {
      problems.push(`${shown} in ${path}: ${setting.env} is read from the environment only (a configuration file cannot name another)`);
    } else if (refusals.has(shown)) {
      refuse(shown, setting.env);
      raw.set(key, { value: undefined, from: `${shown} in ${path}`, inFile: true, refused: true });
    } else if (value !== null && value !== undefined && value !== '') {
      // An empty value is no value, as an empty variable is in the environment.
      raw.set(key, { value, from: `${shown} in ${path}`, inFile: true });
    }
  }
  // A group whose whole value was refused, or a key said otherwise above.
  for (const shown of [...refusals.keys()]) refuse(shown, BY_KEY.get(shown)?.env);
  return routes;
}

/**
 * The file's keys, a group's mapping opened into its keys (`tracing: { endpoint }` is
 * `tracingEndpoint`, shown as `tracing.endpoint`): each as [key, value, as the file writes it].
 */
function withGroupsOpened(values: Record<string, unknown>): [string, unknown, string][] {
  return Object.entries(values).flatMap(([key, value]): [string, unknown, string][] =>
    FILE_KEY_GROUPS.includes(key) && value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.entries(value).map(([leaf, v]) => [`${key}${leaf.charAt(0).toUpperCase()}${leaf.slice(1)}`, v, `${key}.${leaf}`])
      : [[key, value, key]],
  );
}

function envValues(env: ConfigSources['env'], raw: Map<string, Given>): void {
  for (const s of SETTINGS) {
    const lower = s.lowerCaseEnv ? env[s.env.toLowerCase()] : undefined;
    const value = lower !== undefined && lower !== '' ? lower : env[s.env];
    const from = value === lower ? s.env.toLowerCase() : s.env;
    if (value !== undefined && value !== '') raw.set(s.key, { value, from, inFile: false });
  }
}

function displayName(s: Setting, given: Given | undefined): string {
  return given === undefined || given.from === s.env ? s.env : `${given.from} (${s.env})`;
}

/**
 * `BASE_URL` set to the gateway's API root (`.../api/v1`) or its token endpoint is the easy
 * mistake of a first set-up: the proxy adds `/api/v1` itself. A gateway whose API really sits at
 * `.../api/v1/api/v1` says so by naming its own token endpoint under that path as `TOKEN_URL`;
 * any other `TOKEN_URL` (an identity provider's) or `ISSUER_URL` leaves the mistake as it is.
 */
function apiRootProblem(baseUrl: string, tokenUrl: unknown, name: string): string | undefined {
  const tail = /\/api\/v1(\/oauth2\/token)?$/i.exec(baseUrl);
  if (tail === null) return undefined;
  if (tail[1] === undefined && typeof tokenUrl === 'string' && tokenUrl.startsWith(`${baseUrl}/api/v1/`)) return undefined;
  const base = baseUrl.slice(0, tail.index);
  return (
    `${name} ends in ${tail[0]} (got "${baseUrl}"): the proxy adds /api/v1 itself, so set it to the gateway's base URL, ${base}` +
    (tail[1] === undefined
      ? `; a gateway whose API really is at ${baseUrl}/api/v1 keeps this value and sets TOKEN_URL=${baseUrl}/api/v1/oauth2/token as well`
      : '')
  );
}

/** BASE_URL, TOKEN_URL and ISSUER_URL: absolute, http(s), http only for loopback unless allowed. */
function endpoints(
  out: Record<string, unknown>,
  given: (key: string) => boolean,
  name: (key: keyof Config) => string,
  problems: string[],
  options: { baseUrlRequired: boolean },
): void {
  const insecure = out.allowInsecureHttp as boolean;
  if (out.tokenUrl !== undefined) {
    // Used as given: unlike BASE_URL, a token endpoint's trailing slash can matter to its server.
    out.tokenUrl = checkUrl(out.tokenUrl as string, name('tokenUrl'), insecure, problems, {
      trimSlash: false,
      whenUnset: '{BASE_URL}/api/v1/oauth2/token',
    });
  }
  if (out.baseUrl === undefined) {
    if (!given('baseUrl') && options.baseUrlRequired)
      problems.push('BASE_URL is required: the gateway base URL, e.g. https://tickets.example.com');
  } else {
    out.baseUrl = checkUrl(out.baseUrl as string, name('baseUrl'), insecure, problems);
    const apiRoot = typeof out.baseUrl === 'string' ? apiRootProblem(out.baseUrl, out.tokenUrl, name('baseUrl')) : undefined;
    if (apiRoot !== undefined) {
      problems.push(apiRoot);
      out.baseUrl = undefined;
    }
  }
  if (out.tokenUrl === undefined && !given('tokenUrl') && typeof out.baseUrl === 'string' && !given('issuerUrl')) {
    out.tokenUrl = `${out.baseUrl}/api/v1/oauth2/token`;
  }
  // Kept exactly as given: the metadata's issuer must be the same string (RFC 8414 §3.3).
  if (
    out.issuerUrl !== undefined &&
    checkUrl(out.issuerUrl as string, name('issuerUrl'), insecure, problems, { trimSlash: false }) === undefined
  ) {
    out.issuerUrl = undefined;
  }
}

/** A route as loaded: its name, way in and paths, its settings over the top level's, and what each route check returned. */
export interface LoadedRoute<R extends Record<string, SettingsCheck>> extends RouteEntry {
  /** The top level's settings with this route's own over them. */
  readonly config: Config;
  readonly checked: { readonly [K in keyof R]: ReturnType<R[K]> };
}

/** The settings of every setting of {@link SETTINGS} from `raw`, each parsed, or its default. */
function parseSettings(raw: Map<string, Given>, name: (key: keyof Config) => string, problems: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    const given = raw.get(s.key);
    const parsed = given === undefined || given.refused === true ? undefined : parseValue(s.kind, given.value, name(s.key), problems);
    out[s.key] = parsed ?? (s.kind.type === 'params' ? Object.freeze([]) : s.default);
  }
  return out;
}

/** Where a setting came from, for a message about two of them: `A from the environment`, `A from a in /f`, or `A unset`. */
function originOf(raw: Map<string, Given>, key: keyof Config): string {
  const given = raw.get(key);
  const env = BY_KEY.get(key)!.env;
  if (given === undefined) return `${env} unset`;
  return given.inFile ? `${env} from ${given.from}` : `${env} from the environment${given.from === env ? '' : ` (${given.from})`}`;
}

/** What a check's context reads with: the sources, the problems and warnings of the whole load. */
interface ContextDeps {
  readonly sources: ConfigSources;
  readonly problems: string[];
  readonly warnings: ConfigWarning[];
  readonly routes: readonly RouteEntry[];
}

/** The context a check sees of `config`, read from `raw`: each file a setting names is read once. */
function checkContext(
  config: Config,
  raw: Map<string, Given>,
  deps: ContextDeps,
  route?: { readonly name: string; readonly path: string },
): SettingsCheckContext {
  const { sources, problems, warnings } = deps;
  // A setting a route lacks is named where that route would set it.
  const name = (key: keyof Config): string =>
    route !== undefined && !raw.has(key)
      ? `routes[${route.name}].${key} in ${route.path} (${BY_KEY.get(key)!.env})`
      : displayName(BY_KEY.get(key)!, raw.get(key));
  const read = new Map<keyof Config, string | undefined>();
  const bytes = new Map<keyof Config, Uint8Array | undefined>();
  const readBytes = sources.readBytes ?? ((path: string) => Buffer.from(sources.readFile(path), 'utf8'));
  /** Reads the file `key` names with `reader`, or records why it cannot be read. */
  const attempt = <T>(key: keyof Config, reader: (path: string) => T): T | undefined => {
    const path = config[key] as string;
    try {
      return reader(path);
    } catch (err) {
      problems.push(unreadableFileProblem(name(key), path, err));
      return undefined;
    }
  };
  return {
    config,
    routes: deps.routes,
    given: (key) => raw.has(key),
    name,
    bothSet: (a, b) =>
      raw.has(b)
        ? `${BY_KEY.get(a)!.env} and ${BY_KEY.get(b)!.env} are both set (${originOf(raw, a)}, ${originOf(raw, b)})`
        : `${BY_KEY.get(a)!.env} is set (${originOf(raw, a)})`,
    problem: (message) => problems.push(message),
    warn: (key, message) => warnings.push({ setting: BY_KEY.get(key)!.env, message: redactUserinfo(message) }),
    readFile: (key) => {
      if (!read.has(key)) read.set(key, attempt(key, sources.readFile));
      return read.get(key);
    },
    readBytes: (key) => {
      if (!bytes.has(key)) bytes.set(key, attempt(key, readBytes));
      return bytes.get(key);
    },
  };
}

/** Runs each check on `context`: what each returned, under its name. */
function runChecks(checks: Record<string, SettingsCheck>, context: SettingsCheckContext): Record<string, unknown> {
  const checked: Record<string, unknown> = {};
  for (const [what, check] of Object.entries(checks)) checked[what] = check(context);
  return checked;
}

/**
 * Builds the configuration from the environment and an optional file (environment wins), then
 * runs each feature's check of its own settings, collecting every problem before failing:
 * `checks` once, on the top-level settings; `routeChecks` once per route (docs/routes.md), on
 * that route's settings over the top level's. Without `routes` in the file, the top-level
 * settings are one route, `default`. Throws {@link SettingsRefused}; its message names each
 * setting and never contains a secret.
 */
export function loadConfig<C extends Record<string, SettingsCheck>, R extends Record<string, SettingsCheck> = Record<never, never>>(
  sources: ConfigSources,
  checks: C,
  routeChecks: R = {} as R,
): Loaded<C, R> {
  const problems: string[] = [];
  const raw = new Map<string, Given>();
  const routesValue = sources.file ? fileValues(sources.file, raw, problems) : undefined;
  envValues(sources.env, raw);

  const name = (key: keyof Config): string => displayName(BY_KEY.get(key)!, raw.get(key));
  const out = parseSettings(raw, name, problems);
  const listed = routesValue !== undefined && routesValue !== null;
  // With routes, each route names its gateway: the top level's BASE_URL is a default, not required.
  endpoints(out, (key) => raw.has(key), name, problems, { baseUrlRequired: !listed });
  const config = Object.freeze(out) as unknown as Config;
  const warnings: ConfigWarning[] = (sources.file?.warnings ?? []).map((message) => ({ setting: 'CONFIG_FILE', message }));

  const read = listed ? readRoutes(routesValue, { path: sources.file!.path, raw, config, problems }) : [];
  const entries: RouteEntry[] = listed ? read.map((r) => r.entry) : [{ name: DEFAULT_ROUTE, way: { kind: 'main' }, paths: DEFAULT_PATHS }];
  problems.push(...routeSetProblems(entries));
  const deps: ContextDeps = { sources, problems, warnings, routes: entries };
  const context = checkContext(config, raw, deps);
  const checked = runChecks(checks, context);
  const routes: LoadedRoute<R>[] = listed
    ? read.map(({ entry, raw: routeRaw }) => {
        const routeName = (key: keyof Config): string => displayName(BY_KEY.get(key)!, routeRaw.get(key));
        const routeOut = parseSettings(routeRaw, routeName, problems);
        endpoints(routeOut, (key) => routeRaw.has(key), routeName, problems, { baseUrlRequired: false });
        const routeConfig = Object.freeze(routeOut) as unknown as Config;
        const routeChecked = runChecks(
          routeChecks,
          checkContext(routeConfig, routeRaw, deps, { name: entry.name, path: sources.file!.path }),
        );
        return { ...entry, config: routeConfig, checked: routeChecked as LoadedRoute<R>['checked'] };
      })
    : [{ ...entries[0]!, config, checked: runChecks(routeChecks, context) as LoadedRoute<R>['checked'] }];

  // Whatever a check quoted, a URL's user information is not shown (a password written in it);
  // a problem of a top-level setting every route inherits is said once.
  if (problems.length > 0) throw new SettingsRefused([...new Set(problems.map(redactUserinfo))], warnings, config);
  return { config, checked: checked as Loaded<C, R>['checked'], routes, warnings };
}

/** A route of the file, read: its entry, and its settings' sources, the top level's with its own over them. */
interface ReadRoute {
  readonly entry: RouteEntry;
  readonly raw: Map<string, Given>;
}

/** Settings of which one is given: a route that gives one does without the top level's others. */
const ALTERNATIVES: readonly (readonly (keyof Config)[])[] = [
  ['clientSecret', 'clientSecretFile', 'clientAssertionKeyFile', 'clientAssertionFile'],
  ['tokenUrl', 'issuerUrl'],
];

/** The file's keys a route may hold: its own, and the settings it may set for itself. */
const ROUTE_KEYS: readonly string[] = [...ROUTE_OWN_KEYS, ...ROUTE_SETTINGS];

/**
 * The file's `routes`, each read over the top level's settings `raw`: its name, its way in (a
 * mount, a listener of its own, or the main listener), its paths, and the settings it sets. Every
 * problem names `routes` and the route, never a value a secret may be.
 */
function readRoutes(value: unknown, at: { path: string; raw: Map<string, Given>; config: Config; problems: string[] }): ReadRoute[] {
  const { path, problems } = at;
  if (!Array.isArray(value)) {
    problems.push(`routes in ${path} must be a list of routes, each a mapping with its name and settings (got ${typeof value})`);
    return [];
  }
  if (value.length === 0) {
    problems.push(`routes in ${path} lists no route: list at least one, or leave routes out for the one route of the top-level settings`);
  }
  return value.flatMap((item: unknown, i): ReadRoute[] => {
    const label =
      typeof item === 'object' && item !== null && typeof (item as { name?: unknown }).name === 'string'
        ? (item as { name: string }).name
        : undefined;
    const where = label !== undefined && ROUTE_NAME.test(label) ? `routes: "${label}"` : `routes, route ${i + 1} in ${path}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      problems.push(`${where} must be a mapping of the route's name and settings`);
      return [];
    }
    const route = item as Record<string, unknown>;
    if (label === undefined) problems.push(`${where} has no name: each route has one, lower-case letters, digits and "-" (e.g. eu)`);
    else if (!ROUTE_NAME.test(label)) {
      problems.push(
        `${where}: its name must be lower-case letters, digits and "-", at most 31, beginning with a letter or digit (e.g. eu)`,
      );
    }
    const name = label ?? `route-${i + 1}`;
    const raw = new Map(at.raw);
    for (const [key, v] of Object.entries(route)) {
      if (v === undefined || v === '') continue;
      if ((ROUTE_SETTINGS as readonly string[]).includes(key)) {
        // A key set to nothing (`tokenScope:`) takes the top level's value away from this route.
        if (v === null) raw.delete(key);
        else raw.set(key, { value: v, from: `routes[${name}].${key} in ${path}`, inFile: true });
      } else if (v === null) {
        continue;
      } else if (!(ROUTE_OWN_KEYS as readonly string[]).includes(key)) {
        const setting = BY_KEY.get(key);
        if (setting !== undefined && !setting.envOnly) {
          problems.push(`${where}: ${key} is not a route's own: it is the whole proxy's; set it at the top level of ${path}`);
        } else {
          const near = ROUTE_KEYS.find((k) => editDistance(k.toLowerCase(), key.toLowerCase(), 2) <= 2);
          problems.push(`${where}: ${key} is not a route setting${near === undefined ? '' : `; did you mean ${near}?`}`);
        }
      }
    }
    // A route's own key overrides the top level's alternatives to it: its own secret file the
    // top level's secret, its own issuer the top level's token URL.
    for (const group of ALTERNATIVES) {
      if (!group.some((k) => raw.has(k) && raw.get(k) !== at.raw.get(k))) continue;
      for (const k of group) if (raw.get(k) === at.raw.get(k)) raw.delete(k);
    }
    // Without a baseUrl of its own or at the top level, a route has no gateway.
    if (!raw.has('baseUrl')) problems.push(`${where} has no baseUrl, and none is set at the top level (BASE_URL): name its gateway`);
    return [{ entry: { name, way: wayOf(route, where, at), paths: pathsOf(route.paths, where, problems) }, raw }];
  });
}

/** How a route is reached: a mount, a TCP port or a Unix socket of its own, or the main listener. */
function wayOf(route: Record<string, unknown>, where: string, at: { path: string; config: Config; problems: string[] }): RouteWay {
  const { problems, config } = at;
  const ways = (['mount', 'listenPort', 'listenSocket'] as const).filter((k) => route[k] !== undefined && route[k] !== null);
  if (ways.length > 1) problems.push(`${where} has ${ways.join(' and ')}: a route is reached one way, a mount or a listener of its own`);
  const parse = (key: 'listenHost' | 'listenPort' | 'listenSocket' | 'listenSocketMode'): unknown =>
    route[key] === undefined || route[key] === null
      ? undefined
      : parseValue(BY_KEY.get(key)!.kind, route[key], `${where}: ${key}`, problems);
  if (route.listenHost !== undefined && route.listenPort === undefined) {
    problems.push(`${where} has listenHost without listenPort: the host is the address of a listener of its own`);
  }
  if (route.listenSocketMode !== undefined && route.listenSocket === undefined) {
    problems.push(`${where} has listenSocketMode without listenSocket: the mode is its socket file's`);
  }
  if (ways[0] === 'mount') {
    const problem = plainPathProblem(route.mount);
    if (problem !== undefined) {
      problems.push(`${where}: its mount ${problem}`);
      return { kind: 'mount', mount: '/invalid' };
    }
    return { kind: 'mount', mount: route.mount as string };
  }
  if (ways[0] === 'listenPort') {
    const port = parse('listenPort') as number | undefined;
    const host = (parse('listenHost') as string | undefined) ?? config.listenHost;
    return { kind: 'port', host, port: port ?? 0 };
  }
  if (ways[0] === 'listenSocket') {
    const path = (parse('listenSocket') as string | undefined) ?? '';
    return { kind: 'socket', path, mode: (parse('listenSocketMode') as string | undefined) ?? config.listenSocketMode };
  }
  return { kind: 'main' };
}

/** The gateway path prefixes a route forwards: its `paths`, or `/api/v1`. */
function pathsOf(value: unknown, where: string, problems: string[]): readonly string[] {
  if (value === undefined || value === null) return DEFAULT_PATHS;
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  if (list.length === 0) {
    problems.push(`${where}: its paths list no path: leave paths out for /api/v1, or name the gateway's (e.g. [/api/v1, /api/v2])`);
    return DEFAULT_PATHS;
  }
  for (const p of list) {
    const problem = plainPathProblem(p);
    if (problem !== undefined) problems.push(`${where}: each of its paths ${problem}`);
  }
  return list.filter((p): p is string => plainPathProblem(p) === undefined);
}
