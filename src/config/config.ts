import { ConfigError } from '../core/errors.js';
import { isLoopbackHost } from '../core/hosts.js';
import type { LogLevel } from '../core/log.js';
import { checkNetworkSettings } from '../net/network-settings.js';
import { ASSERTION_ALGS } from '../token/assertion-key.js';
import { JWT_BEARER, parseTokenParams } from '../token/client-auth.js';
import { checkClientAuth } from '../token/client-auth-config.js';
import { unreadableFileProblem } from '../core/unreadable.js';

export type TokenAuthMethod =
  | 'client_secret_post'
  | 'client_secret_basic'
  | 'private_key_jwt'
  | 'tls_client_auth'
  | 'client_assertion_file';

/** The proxy's settings, parsed once and frozen. See `config/ticket-auth-proxy.example.yaml`. */
export interface Config {
  readonly baseUrl: string;
  readonly clientId: string | undefined;
  /** The secret at start (from `CLIENT_SECRET` or the file). Never logged. */
  readonly clientSecret: string | undefined;
  readonly clientSecretFile: string | undefined;
  readonly allowInsecureHttp: boolean;
  readonly listenHost: string;
  readonly listenPort: number;
  readonly adminHost: string;
  readonly adminPort: number;
  readonly configFile: string | undefined;
  readonly tokenUrl: string;
  readonly tokenScope: string | undefined;
  readonly tokenAuthMethod: TokenAuthMethod;
  /** Extra form fields on every token request (TOKEN_PARAMS), in order. */
  readonly tokenParams: ReadonlyArray<readonly [string, string]>;
  readonly clientAssertionKeyFile: string | undefined;
  readonly clientAssertionKid: string | undefined;
  readonly clientAssertionAlg: string | undefined;
  readonly clientAssertionFile: string | undefined;
  readonly clientAssertionType: string;
  readonly tokenRefreshRatio: number;
  readonly tokenDefaultTtlS: number;
  readonly tokenWaitTimeoutMs: number;
  readonly tokenFetchTimeoutMs: number;
  readonly upstreamTimeoutMs: number;
  readonly maxHeaderBytes: number;
  readonly replayBodyLimitBytes: number;
  /** PEM CAs trusted in addition to the system roots (§12.1). */
  readonly caFile: string | undefined;
  /** Client certificate chain and key, presented when a server asks (§12.2). */
  readonly tlsClientCertFile: string | undefined;
  readonly tlsClientKeyFile: string | undefined;
  /** Egress proxies and their exceptions (§12.4); the URLs may carry credentials: never logged. */
  readonly httpsProxy: string | undefined;
  readonly httpProxy: string | undefined;
  readonly noProxy: string | undefined;
  readonly passthroughBasic: boolean;
  readonly tokenCacheMax: number;
  readonly shutdownDelayS: number;
  readonly shutdownTimeoutS: number;
  readonly logLevel: LogLevel;
  readonly accessLog: boolean;
}

type Kind =
  | { type: 'url' }
  | { type: 'string'; secret?: boolean }
  | { type: 'path' }
  | { type: 'bool' }
  | { type: 'host' }
  | { type: 'port' }
  | { type: 'int'; min: number; max?: number }
  | { type: 'number'; min: number; max?: number; exclusive?: boolean }
  | { type: 'enum'; values: readonly string[] }
  | { type: 'params' };

interface Setting {
  env: string;
  /** The lower-case env name is read too and wins, as curl reads proxy variables. */
  lowerCaseEnv?: boolean;
  key: keyof Config;
  kind: Kind;
  default?: string | number | boolean;
  /** Not a key of the file: `CONFIG_FILE` names the file itself. */
  envOnly?: boolean;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Every setting: its env name, file key (the env name in lower camelCase), type and default. */
export const SETTINGS: readonly Setting[] = [
  { env: 'BASE_URL', key: 'baseUrl', kind: { type: 'url' } },
  { env: 'CLIENT_ID', key: 'clientId', kind: { type: 'string' } },
  { env: 'CLIENT_SECRET', key: 'clientSecret', kind: { type: 'string', secret: true } },
  { env: 'CLIENT_SECRET_FILE', key: 'clientSecretFile', kind: { type: 'path' } },
  { env: 'ALLOW_INSECURE_HTTP', key: 'allowInsecureHttp', kind: { type: 'bool' }, default: false },
  { env: 'LISTEN_HOST', key: 'listenHost', kind: { type: 'host' }, default: '127.0.0.1' },
  { env: 'LISTEN_PORT', key: 'listenPort', kind: { type: 'port' }, default: 8180 },
  { env: 'ADMIN_HOST', key: 'adminHost', kind: { type: 'host' }, default: '0.0.0.0' },
  { env: 'ADMIN_PORT', key: 'adminPort', kind: { type: 'port' }, default: 8181 },
  { env: 'CONFIG_FILE', key: 'configFile', kind: { type: 'path' }, envOnly: true },
  { env: 'TOKEN_URL', key: 'tokenUrl', kind: { type: 'url' } },
  { env: 'TOKEN_SCOPE', key: 'tokenScope', kind: { type: 'string' } },
  {
    env: 'TOKEN_AUTH_METHOD',
    key: 'tokenAuthMethod',
    kind: { type: 'enum', values: ['client_secret_post', 'client_secret_basic', 'private_key_jwt', 'tls_client_auth', 'client_assertion_file'] },
    default: 'client_secret_post',
  },
  // Client authentication beyond a secret (PRODUCT §3, issues 8, 9, 15).
  { env: 'TOKEN_PARAMS', key: 'tokenParams', kind: { type: 'params' } },
  { env: 'CLIENT_ASSERTION_KEY_FILE', key: 'clientAssertionKeyFile', kind: { type: 'path' } },
  { env: 'CLIENT_ASSERTION_KID', key: 'clientAssertionKid', kind: { type: 'string' } },
  { env: 'CLIENT_ASSERTION_ALG', key: 'clientAssertionAlg', kind: { type: 'enum', values: ASSERTION_ALGS } },
  { env: 'CLIENT_ASSERTION_FILE', key: 'clientAssertionFile', kind: { type: 'path' } },
  { env: 'CLIENT_ASSERTION_TYPE', key: 'clientAssertionType', kind: { type: 'string' }, default: JWT_BEARER },
  {
    env: 'TOKEN_REFRESH_RATIO',
    key: 'tokenRefreshRatio',
    kind: { type: 'number', min: 0, max: 1, exclusive: true },
    default: 0.8,
  },
  { env: 'TOKEN_DEFAULT_TTL_S', key: 'tokenDefaultTtlS', kind: { type: 'int', min: 1 }, default: 300 },
  { env: 'TOKEN_WAIT_TIMEOUT_MS', key: 'tokenWaitTimeoutMs', kind: { type: 'int', min: 0 }, default: 5000 },
  { env: 'TOKEN_FETCH_TIMEOUT_MS', key: 'tokenFetchTimeoutMs', kind: { type: 'int', min: 1 }, default: 10000 },
  { env: 'UPSTREAM_TIMEOUT_MS', key: 'upstreamTimeoutMs', kind: { type: 'int', min: 1 }, default: 30000 },
  { env: 'MAX_HEADER_BYTES', key: 'maxHeaderBytes', kind: { type: 'int', min: 1024 }, default: 16384 },
  { env: 'REPLAY_BODY_LIMIT_BYTES', key: 'replayBodyLimitBytes', kind: { type: 'int', min: 0 }, default: 65536 },
  { env: 'CA_FILE', key: 'caFile', kind: { type: 'path' } },
  { env: 'TLS_CLIENT_CERT_FILE', key: 'tlsClientCertFile', kind: { type: 'path' } },
  { env: 'TLS_CLIENT_KEY_FILE', key: 'tlsClientKeyFile', kind: { type: 'path' } },
  { env: 'HTTPS_PROXY', key: 'httpsProxy', kind: { type: 'string', secret: true }, lowerCaseEnv: true },
  { env: 'HTTP_PROXY', key: 'httpProxy', kind: { type: 'string', secret: true }, lowerCaseEnv: true },
  { env: 'NO_PROXY', key: 'noProxy', kind: { type: 'string' }, lowerCaseEnv: true },
  { env: 'PASSTHROUGH_BASIC', key: 'passthroughBasic', kind: { type: 'bool' }, default: false },
  { env: 'TOKEN_CACHE_MAX', key: 'tokenCacheMax', kind: { type: 'int', min: 1 }, default: 1000 },
  { env: 'SHUTDOWN_DELAY_S', key: 'shutdownDelayS', kind: { type: 'number', min: 0 }, default: 0 },
  { env: 'SHUTDOWN_TIMEOUT_S', key: 'shutdownTimeoutS', kind: { type: 'number', min: 0 }, default: 15 },
  { env: 'LOG_LEVEL', key: 'logLevel', kind: { type: 'enum', values: LOG_LEVELS }, default: 'info' },
  { env: 'ACCESS_LOG', key: 'accessLog', kind: { type: 'bool' }, default: false },
];

const BY_KEY = new Map(SETTINGS.map((s) => [s.key as string, s]));

export interface ConfigSources {
  /** The environment (only variables named in {@link SETTINGS} are read). */
  env: Readonly<Record<string, string | undefined>>;
  /** The parsed YAML file, when there is one, and its path for messages. */
  file?: { path: string; values: unknown } | undefined;
  /** Reads the secret file; injected so tests need no files. Throws when unreadable. */
  readSecretFile: (path: string) => string;
}

/** Trims the secret as read from a file (trailing newline and surrounding white space). */
export function trimSecret(raw: string): string {
  return raw.trim();
}

/**
 * Builds the configuration from the environment and an optional file (environment wins),
 * collecting every problem before failing. Throws {@link ConfigError}; its message names each
 * setting and never contains a secret.
 */
export function loadConfig(sources: ConfigSources): Config {
  const problems: string[] = [];
  const raw = new Map<string, { value: unknown; from: string }>();

  if (sources.file) {
    const { path, values } = sources.file;
    if (values !== null && values !== undefined && (typeof values !== 'object' || Array.isArray(values))) {
      problems.push(`${path} must hold a YAML mapping of settings (got ${Array.isArray(values) ? 'a list' : typeof values})`);
    } else if (values) {
      for (const [key, value] of Object.entries(values as Record<string, unknown>)) {
        const setting = BY_KEY.get(key);
        if (!setting) {
          problems.push(`${key} in ${path} is not a setting (keys are lower camelCase, e.g. baseUrl, clientSecretFile)`);
          continue;
        }
        if (setting.envOnly) {
          problems.push(`${key} in ${path}: ${setting.env} is read from the environment only (a configuration file cannot name another)`);
          continue;
        }
        if (value !== null && value !== undefined) raw.set(key, { value, from: `${key} in ${path}` });
      }
    }
  }
  for (const s of SETTINGS) {
    const lower = s.lowerCaseEnv ? sources.env[s.env.toLowerCase()] : undefined;
    const value = lower !== undefined && lower !== '' ? lower : sources.env[s.env];
    const from = value === lower ? s.env.toLowerCase() : s.env;
    if (value !== undefined && value !== '') raw.set(s.key, { value, from });
  }

  const out: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    const given = raw.get(s.key);
    if (!given) {
      out[s.key] = s.default;
      continue;
    }
    const name = given.from === s.env ? s.env : `${given.from} (${s.env})`;
    const parsed = parseValue(s.kind, given.value, name, problems);
    out[s.key] = parsed === undefined ? s.default : parsed;
  }

  const name = (key: keyof Config): string => {
    const s = BY_KEY.get(key)!;
    return raw.get(key)?.from === s.env || !raw.has(key) ? s.env : `${raw.get(key)!.from} (${s.env})`;
  };

  // BASE_URL and TOKEN_URL: absolute, http(s), http only for loopback unless allowed.
  if (out.baseUrl === undefined) {
    if (!raw.has('baseUrl')) problems.push('BASE_URL is required: the gateway base URL, e.g. https://tickets.example.com');
  } else {
    out.baseUrl = checkUrl(out.baseUrl as string, name('baseUrl'), out.allowInsecureHttp as boolean, problems);
    checkNotApiRoot(out, name('baseUrl'), problems);
  }
  if (out.tokenUrl !== undefined) {
    // Used as given: unlike BASE_URL, a token endpoint's trailing slash can matter to its server.
    out.tokenUrl = checkUrl(out.tokenUrl as string, name('tokenUrl'), out.allowInsecureHttp as boolean, problems, false);
  } else if (typeof out.baseUrl === 'string') {
    out.tokenUrl = `${out.baseUrl}/api/v1/oauth2/token`;
  }

  // Credentials: the configured ones are optional only with pass-through credentials (§6).
  if (out.clientSecret !== undefined && out.clientSecretFile !== undefined) {
    problems.push('CLIENT_SECRET and CLIENT_SECRET_FILE are both set: set only one (the file is preferred)');
  } else if (out.clientSecretFile !== undefined) {
    try {
      const secret = trimSecret(sources.readSecretFile(out.clientSecretFile as string));
      if (secret === '') problems.push(`${name('clientSecretFile')} names a file that is empty: ${out.clientSecretFile as string}`);
      else out.clientSecret = secret;
    } catch (err) {
      problems.push(unreadableFileProblem(name('clientSecretFile'), out.clientSecretFile as string, err));
    }
  }
  const hasId = out.clientId !== undefined;
  const hasSecret = out.clientSecret !== undefined || out.clientSecretFile !== undefined;
  const method = out.tokenAuthMethod as TokenAuthMethod;
  const usesSecret = method === 'client_secret_post' || method === 'client_secret_basic';
  if (!usesSecret) {
    if (!hasId) problems.push(`CLIENT_ID is required with TOKEN_AUTH_METHOD=${method}`);
  } else if (!out.passthroughBasic || hasId || hasSecret) {
    if (!hasId) problems.push('CLIENT_ID is required: the client identifier from the workspace settings');
    if (!hasSecret) problems.push('CLIENT_SECRET_FILE (or CLIENT_SECRET) is required: the client secret from the workspace settings');
  }
  checkClientAuth(method, out, raw, name, sources, problems);

  checkNetworkSettings(out, name, sources.readSecretFile, problems);

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as unknown as Config;
}

function parseValue(kind: Kind, value: unknown, name: string, problems: string[]): unknown {
  const shown = kind.type === 'string' && kind.secret ? '' : ` (got ${JSON.stringify(value)})`;
  const fail = (what: string): undefined => {
    problems.push(`${name} must be ${what}${shown}`);
    return undefined;
  };
  switch (kind.type) {
    case 'string':
    case 'path':
    case 'url':
    case 'host': {
      if (typeof value !== 'string' && typeof value !== 'number') return fail('a string');
      const s = String(value).trim();
      if (s === '') return fail('a non-empty string');
      if (kind.type === 'host' && !/^(\[[0-9a-fA-F:.]+\]|[0-9a-fA-F:.]+|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/.test(s)) {
        return fail('a host name or IP address');
      }
      return kind.type === 'host' ? s.replace(/^\[|\]$/g, '') : s;
    }
    case 'bool': {
      if (typeof value === 'boolean') return value;
      const s = String(value).trim().toLowerCase();
      if (s === 'true' || s === '1' || s === 'yes') return true;
      if (s === 'false' || s === '0' || s === 'no') return false;
      return fail('true or false');
    }
    case 'port':
    case 'int': {
      const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
      const min = kind.type === 'port' ? 0 : kind.min;
      const max = kind.type === 'port' ? 65535 : (kind.max ?? Number.MAX_SAFE_INTEGER);
      if (!Number.isSafeInteger(n) || n < min || n > max) {
        return fail(kind.type === 'port' ? 'a port number from 0 to 65535' : `an integer of at least ${min}`);
      }
      return n;
    }
    case 'number': {
      // Only numbers and numeric strings: Number(true) is 1 and Number([5]) is 5.
      const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
      const max = kind.max ?? Infinity;
      const ok = Number.isFinite(n) && (kind.exclusive ? n > kind.min && n < max : n >= kind.min && n <= max);
      if (!ok) {
        return fail(
          kind.exclusive ? `a number between ${kind.min} and ${max}, exclusive` : `a number of at least ${kind.min}`,
        );
      }
      return n;
    }
    case 'params': {
      const { params, problems: bad } = parseTokenParams(value, name);
      problems.push(...bad);
      return bad.length > 0 ? undefined : Object.freeze(params.map((p) => Object.freeze(p)));
    }
    case 'enum': {
      const s = String(value).trim();
      if (!kind.values.includes(s)) return fail(`one of ${kind.values.join(', ')}`);
      return s;
    }
  }
}

/** A URL as shown in a message: user information (`user:password@`) replaced, whatever the scheme. */
function withoutUserinfo(value: string): string {
  return value.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/*)?[^/?#]*@/, (_m, scheme: string | undefined) => `${scheme ?? ''}***@`);
}

/**
 * `BASE_URL` set to the gateway's API root (`.../api/v1`) or its token endpoint is the easy
 * mistake of a first set-up (issue 12): the proxy adds `/api/v1` itself. A gateway whose API
 * really sits at `.../api/v1/api/v1` says so by naming its `TOKEN_URL` explicitly.
 */
function checkNotApiRoot(out: Record<string, unknown>, name: string, problems: string[]): void {
  if (typeof out.baseUrl !== 'string') return;
  const baseUrl = out.baseUrl;
  const tail = /\/api\/v1(\/oauth2\/token)?$/i.exec(baseUrl);
  if (tail === null || (tail[1] === undefined && out.tokenUrl !== undefined)) return;
  const base = baseUrl.slice(0, tail.index);
  problems.push(
    `${name} ends in ${tail[0]} (got "${baseUrl}"): the proxy adds /api/v1 itself, so set it to the gateway's base URL, ${base}` +
      (tail[1] === undefined
        ? `; a gateway whose API really is at ${baseUrl}/api/v1 keeps this value and sets TOKEN_URL=${baseUrl}/api/v1/oauth2/token as well`
        : ''),
  );
  out.baseUrl = undefined;
}

function checkUrl(value: string, name: string, allowInsecure: boolean, problems: string[], trimSlash = true): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`${name} must be an absolute https URL (got ${JSON.stringify(withoutUserinfo(value))})`);
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    problems.push(`${name} must be an absolute https URL (got ${JSON.stringify(withoutUserinfo(value))})`);
    return undefined;
  }
  if (url.username || url.password) {
    problems.push(`${name} must not carry credentials in the URL; use CLIENT_ID and CLIENT_SECRET_FILE`);
    return undefined;
  }
  if (url.search || url.hash) {
    problems.push(`${name} must not have a query or fragment (got ${JSON.stringify(withoutUserinfo(value))})`);
    return undefined;
  }
  if (url.protocol === 'http:' && !allowInsecure && !isLoopbackHost(url.hostname)) {
    problems.push(
      `${name} uses http: for a non-loopback host (${url.hostname}); use https, or set ALLOW_INSECURE_HTTP=true to accept sending credentials in clear text`,
    );
    return undefined;
  }
  return `${url.origin}${trimSlash ? url.pathname.replace(/\/+$/, '') : url.pathname}`;
}
