import type { LogLevel } from '../core/log.js';
import { TRACING_SETTINGS, type TracingConfig } from './tracing.js';

/**
 * The names `TOKEN_AUTH_METHOD` accepts: how the client proves who it is at the token endpoint.
 * Each is one record in `token/client-auth/`, which config/ sits below and cannot read; the
 * compiler and `test/unit/auth-methods.test.ts` hold the two together.
 */
export const TOKEN_AUTH_METHODS = [
  'client_secret_post',
  'client_secret_basic',
  'private_key_jwt',
  'tls_client_auth',
  'client_assertion_file',
  'client_secret_jwt',
] as const;

/** One of {@link TOKEN_AUTH_METHODS}. */
export type TokenAuthMethod = (typeof TOKEN_AUTH_METHODS)[number];

/** Sender-constrained tokens (`DPOP`, RFC 9449): off, proofs sent (a Bearer answer still used), or a DPoP-bound token required. */
export type DpopMode = 'off' | 'on' | 'required';

/** The algorithms a DPoP proof may be signed with (`DPOP_ALG`); which fit depends on the key. */
export const DPOP_ALGS = ['ES256', 'ES384', 'EdDSA', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512'] as const;

/** One of {@link DPOP_ALGS}. */
export type DpopAlg = (typeof DPOP_ALGS)[number];

/**
 * What `/readyz` waits for (`READINESS`): `token`, a valid token held now; `started`, the first
 * token held once, so that a sidecar's pod stays in its Service through an identity-provider
 * outage (docs/operations.md, "The admin listener").
 */
export const READINESS_MODES = ['token', 'started'] as const;

/** One of {@link READINESS_MODES}. */
export type Readiness = (typeof READINESS_MODES)[number];

/** The proxy's settings, parsed once and frozen. See `config/ticket-auth-proxy.example.yaml`. */
export interface Config extends TracingConfig {
  readonly baseUrl: string;
  readonly clientId: string | undefined;
  /** `CLIENT_SECRET` as given (the secret in use may come from the file instead). Never logged. */
  readonly clientSecret: string | undefined;
  readonly clientSecretFile: string | undefined;
  readonly allowInsecureHttp: boolean;
  readonly listenHost: string;
  readonly listenPort: number;
  /** A Unix-domain socket path for the proxy listener, instead of `listenHost`/`listenPort`. */
  readonly listenSocket: string | undefined;
  /** The socket file's mode, four octal digits (`0660`). */
  readonly listenSocketMode: string;
  readonly adminHost: string;
  readonly adminPort: number;
  /** What `/readyz` waits for: a valid token held now, or the first token held once. */
  readonly readiness: Readiness;
  readonly configFile: string | undefined;
  /** The token endpoint: `TOKEN_URL`, or the gateway's own; undefined when `ISSUER_URL`'s metadata names it. */
  readonly tokenUrl: string | undefined;
  /** An OAuth 2.0 / OpenID Connect issuer, exactly as given: its metadata names the token endpoint. */
  readonly issuerUrl: string | undefined;
  readonly tokenScope: string | undefined;
  readonly tokenAuthMethod: TokenAuthMethod;
  /** Extra form fields on every token request (TOKEN_PARAMS), in order. */
  readonly tokenParams: ReadonlyArray<readonly [string, string]>;
  readonly clientAssertionKeyFile: string | undefined;
  readonly clientAssertionKid: string | undefined;
  readonly clientAssertionAlg: string | undefined;
  readonly clientAssertionFile: string | undefined;
  readonly clientAssertionType: string;
  readonly dpop: DpopMode;
  /** PEM private key the DPoP proofs are signed with; without it a key is generated at start. */
  readonly dpopKeyFile: string | undefined;
  readonly dpopAlg: DpopAlg | undefined;
  readonly tokenRefreshRatio: number;
  readonly tokenDefaultTtlS: number;
  readonly tokenWaitTimeoutMs: number;
  readonly tokenFetchTimeoutMs: number;
  readonly upstreamTimeoutMs: number;
  /** Longest silence inside a request or response body before the exchange is ended. */
  readonly upstreamIdleTimeoutMs: number;
  readonly maxHeaderBytes: number;
  readonly replayBodyLimitBytes: number;
  /** PEM CAs trusted in addition to the system roots. */
  readonly caFile: string | undefined;
  /** Client certificate chain and key, presented when a server asks. */
  readonly tlsClientCertFile: string | undefined;
  readonly tlsClientKeyFile: string | undefined;
  /** Egress proxies and their exceptions; the URLs may carry credentials: never logged. */
  readonly httpsProxy: string | undefined;
  readonly httpProxy: string | undefined;
  readonly noProxy: string | undefined;
  readonly passthroughBasic: boolean;
  readonly tokenCacheMax: number;
  /** The shared token store: `redis://` or `rediss://` URL(s); may carry a password, so never shown whole. */
  readonly tokenStoreUrl: string | undefined;
  readonly tokenStoreMode: 'standalone' | 'cluster';
  readonly tokenStorePasswordFile: string | undefined;
  /** Key material the store key is derived from, instead of the secret or private key. */
  readonly tokenStoreKeyFile: string | undefined;
  readonly tokenStorePrefix: string;
  readonly tokenStoreTimeoutMs: number;
  readonly tokenStoreScripts: 'eval' | 'functions';
  readonly shutdownDelayS: number;
  readonly shutdownTimeoutS: number;
  readonly logLevel: LogLevel;
  readonly accessLog: boolean;
  /** The process series on /metrics: the essentials, or prom-client's full default set. */
  readonly metricsRuntime: 'essential' | 'full';
  /**
   * The memory the proxy must stay under, in MB: above 90 % of it new requests are shed. Unset:
   * the container's limit (none without one); 0: no shedding.
   */
  readonly memoryLimitMb: number | undefined;
}

/** The syntax of a setting's value. */
export type Kind =
  | { type: 'url' }
  | { type: 'string'; secret?: boolean }
  | { type: 'path' }
  | { type: 'bool' }
  | { type: 'host' }
  | { type: 'port' }
  /** A file mode in octal (`0660`), at most `0777`. */
  | { type: 'mode' }
  | { type: 'int'; min: number; max?: number }
  | { type: 'number'; min: number; max?: number; exclusive?: boolean }
  | { type: 'enum'; values: readonly string[] }
  | { type: 'params' }
  /** An egress proxy URL as curl reads one; may carry credentials, so never shown. */
  | { type: 'proxy' };

/** One row of the settings table. */
export interface Setting {
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
  { env: 'LISTEN_SOCKET', key: 'listenSocket', kind: { type: 'path' } },
  { env: 'LISTEN_SOCKET_MODE', key: 'listenSocketMode', kind: { type: 'mode' }, default: '0660' },
  { env: 'ADMIN_HOST', key: 'adminHost', kind: { type: 'host' }, default: '0.0.0.0' },
  { env: 'ADMIN_PORT', key: 'adminPort', kind: { type: 'port' }, default: 8181 },
  { env: 'READINESS', key: 'readiness', kind: { type: 'enum', values: READINESS_MODES }, default: 'token' },
  { env: 'CONFIG_FILE', key: 'configFile', kind: { type: 'path' }, envOnly: true },
  { env: 'TOKEN_URL', key: 'tokenUrl', kind: { type: 'url' } },
  { env: 'ISSUER_URL', key: 'issuerUrl', kind: { type: 'url' } },
  { env: 'TOKEN_SCOPE', key: 'tokenScope', kind: { type: 'string' } },
  {
    env: 'TOKEN_AUTH_METHOD',
    key: 'tokenAuthMethod',
    kind: { type: 'enum', values: TOKEN_AUTH_METHODS },
    default: 'client_secret_post',
  },
  { env: 'TOKEN_PARAMS', key: 'tokenParams', kind: { type: 'params' } },
  { env: 'CLIENT_ASSERTION_KEY_FILE', key: 'clientAssertionKeyFile', kind: { type: 'path' } },
  { env: 'CLIENT_ASSERTION_KID', key: 'clientAssertionKid', kind: { type: 'string' } },
  {
    env: 'CLIENT_ASSERTION_ALG',
    key: 'clientAssertionAlg',
    kind: { type: 'enum', values: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'] },
  },
  { env: 'CLIENT_ASSERTION_FILE', key: 'clientAssertionFile', kind: { type: 'path' } },
  {
    env: 'CLIENT_ASSERTION_TYPE',
    key: 'clientAssertionType',
    kind: { type: 'string' },
    default: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
  },
  { env: 'DPOP', key: 'dpop', kind: { type: 'enum', values: ['off', 'on', 'required'] }, default: 'off' },
  { env: 'DPOP_KEY_FILE', key: 'dpopKeyFile', kind: { type: 'path' } },
  { env: 'DPOP_ALG', key: 'dpopAlg', kind: { type: 'enum', values: DPOP_ALGS } },
  {
    env: 'TOKEN_REFRESH_RATIO',
    key: 'tokenRefreshRatio',
    kind: { type: 'number', min: 0, max: 1, exclusive: true },
    default: 0.8,
  },
  { env: 'TOKEN_DEFAULT_TTL_S', key: 'tokenDefaultTtlS', kind: { type: 'int', min: 1 }, default: 300 },
  { env: 'TOKEN_WAIT_TIMEOUT_MS', key: 'tokenWaitTimeoutMs', kind: { type: 'int', min: 0 }, default: 5000 },
  { env: 'TOKEN_FETCH_TIMEOUT_MS', key: 'tokenFetchTimeoutMs', kind: { type: 'int', min: 1, max: 120000 }, default: 10000 },
  { env: 'UPSTREAM_TIMEOUT_MS', key: 'upstreamTimeoutMs', kind: { type: 'int', min: 1 }, default: 30000 },
  { env: 'UPSTREAM_IDLE_TIMEOUT_MS', key: 'upstreamIdleTimeoutMs', kind: { type: 'int', min: 1 }, default: 60000 },
  { env: 'MAX_HEADER_BYTES', key: 'maxHeaderBytes', kind: { type: 'int', min: 1024 }, default: 16384 },
  { env: 'REPLAY_BODY_LIMIT_BYTES', key: 'replayBodyLimitBytes', kind: { type: 'int', min: 0 }, default: 65536 },
  { env: 'CA_FILE', key: 'caFile', kind: { type: 'path' } },
  { env: 'TLS_CLIENT_CERT_FILE', key: 'tlsClientCertFile', kind: { type: 'path' } },
  { env: 'TLS_CLIENT_KEY_FILE', key: 'tlsClientKeyFile', kind: { type: 'path' } },
  { env: 'HTTPS_PROXY', key: 'httpsProxy', kind: { type: 'proxy' }, lowerCaseEnv: true },
  { env: 'HTTP_PROXY', key: 'httpProxy', kind: { type: 'proxy' }, lowerCaseEnv: true },
  { env: 'NO_PROXY', key: 'noProxy', kind: { type: 'string' }, lowerCaseEnv: true },
  { env: 'PASSTHROUGH_BASIC', key: 'passthroughBasic', kind: { type: 'bool' }, default: false },
  { env: 'TOKEN_CACHE_MAX', key: 'tokenCacheMax', kind: { type: 'int', min: 1 }, default: 1000 },
  { env: 'TOKEN_STORE_URL', key: 'tokenStoreUrl', kind: { type: 'string', secret: true } },
  { env: 'TOKEN_STORE_MODE', key: 'tokenStoreMode', kind: { type: 'enum', values: ['standalone', 'cluster'] }, default: 'standalone' },
  { env: 'TOKEN_STORE_PASSWORD_FILE', key: 'tokenStorePasswordFile', kind: { type: 'path' } },
  { env: 'TOKEN_STORE_KEY_FILE', key: 'tokenStoreKeyFile', kind: { type: 'path' } },
  { env: 'TOKEN_STORE_PREFIX', key: 'tokenStorePrefix', kind: { type: 'string' }, default: 'ticket-auth-proxy:' },
  { env: 'TOKEN_STORE_TIMEOUT_MS', key: 'tokenStoreTimeoutMs', kind: { type: 'int', min: 1 }, default: 500 },
  { env: 'TOKEN_STORE_SCRIPTS', key: 'tokenStoreScripts', kind: { type: 'enum', values: ['eval', 'functions'] }, default: 'eval' },
  { env: 'SHUTDOWN_DELAY_S', key: 'shutdownDelayS', kind: { type: 'number', min: 0 }, default: 0 },
  { env: 'SHUTDOWN_TIMEOUT_S', key: 'shutdownTimeoutS', kind: { type: 'number', min: 0 }, default: 15 },
  { env: 'LOG_LEVEL', key: 'logLevel', kind: { type: 'enum', values: LOG_LEVELS }, default: 'info' },
  { env: 'ACCESS_LOG', key: 'accessLog', kind: { type: 'bool' }, default: false },
  { env: 'METRICS_RUNTIME', key: 'metricsRuntime', kind: { type: 'enum', values: ['essential', 'full'] }, default: 'essential' },
  { env: 'MEMORY_LIMIT_MB', key: 'memoryLimitMb', kind: { type: 'int', min: 0 } },
  ...TRACING_SETTINGS,
];
