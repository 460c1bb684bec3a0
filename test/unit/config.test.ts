import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stdSerializers } from 'pino';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SETTINGS, type Config } from '../../src/config/config.js';
import { loadConfig, SettingsRefused } from '../../src/config/load.js';
import { isLoopbackHost } from '../../src/core/hosts.js';
import { ConfigError } from '../../src/core/errors.js';
import type { TokenStartup } from '../../src/token/client-auth/index.js';
import { filesOf, loadSettings } from '../helpers/load-settings.js';

const FILE = '/etc/ticket-auth-proxy.yaml';
const SECRET_PATH = '/var/run/secrets/ticket/client-secret';
const STORE_PASSWORD_PATH = '/var/run/secrets/ticket/store-password';
const STORE_KEY_PATH = '/var/run/secrets/ticket/store-key';
const FILES = { [SECRET_PATH]: 'from-file\n', [STORE_PASSWORD_PATH]: 'store-password\n', [STORE_KEY_PATH]: 'k'.repeat(32) };
const MINIMAL = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'secret-value' };

type Env = Record<string, string | undefined>;

function loadBoth(
  env: Env,
  file?: unknown,
  secretFiles: Record<string, string> = {},
  options: { real?: boolean } = {},
): { config: Config; token: TokenStartup } {
  const { config, checked } = loadSettings({
    env,
    file: file === undefined ? undefined : { path: FILE, values: typeof file === 'string' ? parseYaml(file) : file },
    readFile: options.real ? (p) => readFileSync(p, 'utf8') : filesOf(secretFiles),
    ...(options.real ? { readBytes: (p: string) => readFileSync(p) } : {}),
  });
  return { config, token: checked.token };
}

function load(env: Env, file?: unknown, secretFiles: Record<string, string> = {}, options: { real?: boolean } = {}): Config {
  return loadBoth(env, file, secretFiles, options).config;
}

/** The ConfigError `load` throws (with `real`, reading the file system); fails the test when it throws nothing. */
function configError(env: Env, file?: unknown, secretFiles?: Record<string, string>, options: { real?: boolean } = {}): ConfigError {
  try {
    load(env, file, secretFiles, options);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, the configuration loaded');
}

describe('loadConfig defaults and sources', () => {
  it('fills every default', () => {
    expect(load(MINIMAL)).toEqual({
      baseUrl: 'https://gw.example.com',
      clientId: 'app',
      clientSecret: 'secret-value',
      clientSecretFile: undefined,
      allowInsecureHttp: false,
      listenHost: '127.0.0.1',
      listenPort: 8180,
      listenSocket: undefined,
      listenSocketMode: '0660',
      adminHost: '0.0.0.0',
      adminPort: 8181,
      readiness: 'token',
      configFile: undefined,
      tokenUrl: 'https://gw.example.com/api/v1/oauth2/token',
      issuerUrl: undefined,
      tokenScope: undefined,
      tokenAuthMethod: 'client_secret_post',
      tokenParams: [],
      clientAssertionKeyFile: undefined,
      clientAssertionKid: undefined,
      clientAssertionAlg: undefined,
      clientAssertionFile: undefined,
      clientAssertionType: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      dpop: 'off',
      dpopKeyFile: undefined,
      dpopAlg: undefined,
      tokenRefreshRatio: 0.8,
      tokenDefaultTtlS: 300,
      tokenWaitTimeoutMs: 5000,
      tokenFetchTimeoutMs: 10000,
      upstreamTimeoutMs: 30000,
      upstreamIdleTimeoutMs: 60000,
      maxHeaderBytes: 16384,
      replayBodyLimitBytes: 65536,
      passthroughBasic: false,
      tokenCacheMax: 1000,
      tokenStoreUrl: undefined,
      tokenStoreMode: 'standalone',
      tokenStorePasswordFile: undefined,
      tokenStoreKeyFile: undefined,
      tokenStorePrefix: 'ticket-auth-proxy:',
      tokenStoreTimeoutMs: 500,
      tokenStoreScripts: 'eval',
      shutdownDelayS: 0,
      shutdownTimeoutS: 15,
      logLevel: 'info',
      accessLog: false,
      metricsRuntime: 'essential',
      tracingEndpoint: undefined,
      tracingTracesEndpoint: undefined,
      tracingHeaders: undefined,
      tracingProtocol: 'http/protobuf',
      tracingServiceName: 'ticket-auth-proxy',
      tracingResourceAttributes: undefined,
      tracingSampler: 'parentbased_traceidratio',
      tracingSamplerArg: 0.01,
      tracingSdkDisabled: false,
    });
  });

  it('is frozen', () => {
    expect(Object.isFrozen(load(MINIMAL))).toBe(true);
  });

  it('names every file key as its env name in lower camelCase (the OpenTelemetry variables: under tracing)', () => {
    for (const s of SETTINGS) {
      if (s.env.startsWith('OTEL_')) {
        expect(s.key).toMatch(/^tracing[A-Z]/);
        continue;
      }
      const camel = s.env.toLowerCase().replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
      expect(s.key).toBe(camel);
    }
  });

  const everyEnv: Env = {
    BASE_URL: 'https://gw.example.com/gw/',
    CLIENT_ID: 'app',
    CLIENT_SECRET_FILE: SECRET_PATH,
    ALLOW_INSECURE_HTTP: 'true',
    LISTEN_HOST: '0.0.0.0',
    LISTEN_PORT: '9180',
    ADMIN_HOST: '::1',
    ADMIN_PORT: '9181',
    READINESS: 'started',
    CONFIG_FILE: FILE,
    TOKEN_URL: 'http://idp.internal/oauth/token',
    TOKEN_SCOPE: 'tickets.read tickets.write',
    TOKEN_AUTH_METHOD: 'client_secret_basic',
    TOKEN_PARAMS: 'audience=https%3A%2F%2Fapi&resource=a&resource=b',
    CLIENT_ASSERTION_TYPE: 'urn:x',
    DPOP: 'required',
    DPOP_ALG: 'ES384',
    TOKEN_REFRESH_RATIO: '0.5',
    TOKEN_DEFAULT_TTL_S: '60',
    TOKEN_WAIT_TIMEOUT_MS: '0',
    TOKEN_FETCH_TIMEOUT_MS: '2000',
    UPSTREAM_TIMEOUT_MS: '1000',
    UPSTREAM_IDLE_TIMEOUT_MS: '2000',
    MAX_HEADER_BYTES: '32768',
    REPLAY_BODY_LIMIT_BYTES: '0',
    HTTPS_PROXY: 'http://proxy.internal:3128',
    HTTP_PROXY: 'http://proxy.internal:3129',
    NO_PROXY: '.internal,localhost',
    PASSTHROUGH_BASIC: 'true',
    TOKEN_CACHE_MAX: '5',
    TOKEN_STORE_URL: 'rediss://proxy@cache.internal:6380/2',
    TOKEN_STORE_MODE: 'standalone',
    TOKEN_STORE_PASSWORD_FILE: STORE_PASSWORD_PATH,
    TOKEN_STORE_KEY_FILE: STORE_KEY_PATH,
    TOKEN_STORE_PREFIX: 'tap:',
    TOKEN_STORE_TIMEOUT_MS: '100',
    TOKEN_STORE_SCRIPTS: 'functions',
    SHUTDOWN_DELAY_S: '2.5',
    SHUTDOWN_TIMEOUT_S: '30',
    LOG_LEVEL: 'debug',
    ACCESS_LOG: 'yes',
    METRICS_RUNTIME: 'full',
    MEMORY_LIMIT_MB: '192',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces',
    OTEL_EXPORTER_OTLP_HEADERS: 'api-key=abc',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_SERVICE_NAME: 'proxy-a',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test',
    OTEL_TRACES_SAMPLER: 'always_on',
    OTEL_TRACES_SAMPLER_ARG: '0.5',
    OTEL_SDK_DISABLED: 'true',
  };
  const everyParsed: Config = {
    baseUrl: 'https://gw.example.com/gw',
    clientId: 'app',
    clientSecret: undefined,
    clientSecretFile: SECRET_PATH,
    allowInsecureHttp: true,
    listenHost: '0.0.0.0',
    listenPort: 9180,
    listenSocket: undefined,
    listenSocketMode: '0660',
    adminHost: '::1',
    adminPort: 9181,
    readiness: 'started',
    configFile: FILE,
    tokenUrl: 'http://idp.internal/oauth/token',
    issuerUrl: undefined,
    tokenScope: 'tickets.read tickets.write',
    tokenAuthMethod: 'client_secret_basic',
    tokenParams: [
      ['audience', 'https://api'],
      ['resource', 'a'],
      ['resource', 'b'],
    ],
    clientAssertionKeyFile: undefined,
    clientAssertionKid: undefined,
    clientAssertionAlg: undefined,
    clientAssertionFile: undefined,
    clientAssertionType: 'urn:x',
    dpop: 'required',
    dpopKeyFile: undefined,
    dpopAlg: 'ES384',
    tokenRefreshRatio: 0.5,
    tokenDefaultTtlS: 60,
    tokenWaitTimeoutMs: 0,
    tokenFetchTimeoutMs: 2000,
    upstreamTimeoutMs: 1000,
    upstreamIdleTimeoutMs: 2000,
    maxHeaderBytes: 32768,
    replayBodyLimitBytes: 0,
    caFile: undefined,
    tlsClientCertFile: undefined,
    tlsClientKeyFile: undefined,
    httpsProxy: 'http://proxy.internal:3128',
    httpProxy: 'http://proxy.internal:3129',
    noProxy: '.internal,localhost',
    passthroughBasic: true,
    tokenCacheMax: 5,
    tokenStoreUrl: 'rediss://proxy@cache.internal:6380/2',
    tokenStoreMode: 'standalone',
    tokenStorePasswordFile: STORE_PASSWORD_PATH,
    tokenStoreKeyFile: STORE_KEY_PATH,
    tokenStorePrefix: 'tap:',
    tokenStoreTimeoutMs: 100,
    tokenStoreScripts: 'functions',
    shutdownDelayS: 2.5,
    shutdownTimeoutS: 30,
    logLevel: 'debug',
    accessLog: true,
    metricsRuntime: 'full',
    memoryLimitMb: 192,
    tracingEndpoint: 'http://127.0.0.1:4318',
    tracingTracesEndpoint: 'http://127.0.0.1:4318/v1/traces',
    tracingHeaders: 'api-key=abc',
    tracingProtocol: 'http/protobuf',
    tracingServiceName: 'proxy-a',
    tracingResourceAttributes: 'deployment.environment=test',
    tracingSampler: 'always_on',
    tracingSamplerArg: 0.5,
    tracingSdkDisabled: true,
  };

  it('parses every setting from the environment', () => {
    const { config, token } = loadBoth(everyEnv, undefined, FILES);
    expect(config).toEqual(everyParsed);
    expect(token.clientSecret).toBe('from-file');
  });

  it('parses every setting from the YAML file under its camelCase key', () => {
    const yaml = [
      'baseUrl: https://gw.example.com/gw/',
      'clientId: app',
      `clientSecretFile: ${SECRET_PATH}`,
      'allowInsecureHttp: true',
      'listenHost: 0.0.0.0',
      'listenPort: 9180',
      "adminHost: '::1'",
      'adminPort: 9181',
      'readiness: started',
      'tokenUrl: http://idp.internal/oauth/token',
      'tokenScope: tickets.read tickets.write',
      'tokenAuthMethod: client_secret_basic',
      'tokenParams:',
      '  audience: https://api',
      '  resource: [a, b]',
      'clientAssertionType: urn:x',
      'dpop: required',
      'dpopAlg: ES384',
      'tokenRefreshRatio: 0.5',
      'tokenDefaultTtlS: 60',
      'tokenWaitTimeoutMs: 0',
      'tokenFetchTimeoutMs: 2000',
      'upstreamTimeoutMs: 1000',
      'upstreamIdleTimeoutMs: 2000',
      'maxHeaderBytes: 32768',
      'replayBodyLimitBytes: 0',
      'httpsProxy: http://proxy.internal:3128',
      'httpProxy: http://proxy.internal:3129',
      "noProxy: '.internal,localhost'",
      'passthroughBasic: true',
      'tokenCacheMax: 5',
      'tokenStoreUrl: rediss://proxy@cache.internal:6380/2',
      'tokenStoreMode: standalone',
      `tokenStorePasswordFile: ${STORE_PASSWORD_PATH}`,
      `tokenStoreKeyFile: ${STORE_KEY_PATH}`,
      "tokenStorePrefix: 'tap:'",
      'tokenStoreTimeoutMs: 100',
      'tokenStoreScripts: functions',
      'shutdownDelayS: 2.5',
      'shutdownTimeoutS: 30',
      'logLevel: debug',
      'accessLog: true',
      'metricsRuntime: full',
      'memoryLimitMb: 192',
      'tracing:',
      '  endpoint: http://127.0.0.1:4318',
      '  tracesEndpoint: http://127.0.0.1:4318/v1/traces',
      '  headers: api-key=abc',
      '  protocol: http/protobuf',
      '  serviceName: proxy-a',
      '  resourceAttributes: deployment.environment=test',
      '  sampler: always_on',
      '  samplerArg: 0.5',
      '  sdkDisabled: true',
    ].join('\n');
    const { config, token } = loadBoth({}, yaml, FILES);
    expect(config).toEqual({ ...everyParsed, configFile: undefined });
    expect(token.clientSecret).toBe('from-file');
  });

  it('lets the environment win over the file', () => {
    const config = load(
      { LISTEN_PORT: '7000', CLIENT_ID: 'env-app' },
      { baseUrl: 'https://gw.example.com', clientId: 'file-app', clientSecret: 'x', listenPort: 6000, adminPort: 6001 },
    );
    expect(config).toMatchObject({ listenPort: 7000, clientId: 'env-app', adminPort: 6001 });
  });

  it('ignores an empty environment variable, keeping the file value', () => {
    const config = load({ ...MINIMAL, LISTEN_PORT: '' }, { listenPort: 6000 });
    expect(config.listenPort).toBe(6000);
  });

  it('takes an empty YAML file as no settings', () => {
    expect(load(MINIMAL, '').listenPort).toBe(8180);
    expect(load(MINIMAL, '# only comments\n').listenPort).toBe(8180);
  });

  it('accepts the commented example configuration', () => {
    const example = readFileSync(new URL('../../config/ticket-auth-proxy.example.yaml', import.meta.url), 'utf8');
    const { config, token } = loadBoth({}, example, { '/var/run/secrets/ticket-auth-proxy/client-secret': 'example-secret\n' });
    expect(config).toMatchObject({ baseUrl: 'https://tickets.example.com', listenPort: 8180 });
    expect(token.clientSecret).toBe('example-secret');
  });
});

describe('loadConfig value rules', () => {
  it.each([
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['yes', true],
    ['false', false],
    ['0', false],
    ['No', false],
  ])('reads the bool %j as %s', (value, expected) => {
    expect(load({ ...MINIMAL, ACCESS_LOG: value }).accessLog).toBe(expected);
  });

  it('refuses a bool it cannot read, naming the setting', () => {
    expect(configError({ ...MINIMAL, PASSTHROUGH_BASIC: 'maybe' }).problems).toEqual([
      'PASSTHROUGH_BASIC must be true or false (got "maybe")',
    ]);
  });

  it.each([
    ['LISTEN_PORT', '-1'],
    ['LISTEN_PORT', '65536'],
    ['ADMIN_PORT', 'http'],
    ['TOKEN_DEFAULT_TTL_S', '0'],
    ['TOKEN_FETCH_TIMEOUT_MS', '1.5'],
    ['TOKEN_CACHE_MAX', '1e3'],
    ['REPLAY_BODY_LIMIT_BYTES', '-5'],
    ['UPSTREAM_TIMEOUT_MS', '99999999999999999999'],
  ])('refuses %s=%s', (name, value) => {
    const problems = configError({ ...MINIMAL, [name]: value }).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^${name} must be`));
  });

  it('refuses a token request timeout past 120 s, the longest lease a shared store honours, naming the range', () => {
    expect(configError({ ...MINIMAL, TOKEN_FETCH_TIMEOUT_MS: '120001' }).problems).toEqual([
      'TOKEN_FETCH_TIMEOUT_MS must be an integer from 1 to 120000 (got "120001")',
    ]);
    expect(load({ ...MINIMAL, TOKEN_FETCH_TIMEOUT_MS: '120000' }).tokenFetchTimeoutMs).toBe(120000);
  });

  it('accepts ports from 0 to 65535 and integers at their minimum', () => {
    expect(load({ ...MINIMAL, LISTEN_PORT: '0', ADMIN_PORT: '65535', TOKEN_DEFAULT_TTL_S: '1' })).toMatchObject({
      listenPort: 0,
      adminPort: 65535,
      tokenDefaultTtlS: 1,
    });
  });

  it.each(['0', '1', '-0.1', '1.5', 'abc', ''])('refuses TOKEN_REFRESH_RATIO=%j in the file, outside (0, 1)', (value) => {
    const problems = configError(MINIMAL, { tokenRefreshRatio: value === '' ? ' ' : value }).problems;
    expect(problems).toEqual([
      expect.stringMatching(/^tokenRefreshRatio in .* \(TOKEN_REFRESH_RATIO\) must be a number between 0 and 1, exclusive/),
    ]);
  });

  it.each(['0.01', '0.5', '0.99'])('accepts TOKEN_REFRESH_RATIO=%s', (value) => {
    expect(load({ ...MINIMAL, TOKEN_REFRESH_RATIO: value }).tokenRefreshRatio).toBe(Number(value));
  });

  it('refuses a YAML boolean or list where a number belongs', () => {
    const problems = configError(MINIMAL, { shutdownDelayS: true, tokenRefreshRatio: [0.5], listenPort: [8080] }).problems;
    expect(problems).toHaveLength(3);
    expect(problems.join('\n')).toContain('shutdownDelayS');
    expect(problems.join('\n')).toContain('tokenRefreshRatio');
    expect(problems.join('\n')).toContain('listenPort');
  });

  it('refuses a value outside an enum, listing the allowed ones', () => {
    expect(configError({ ...MINIMAL, TOKEN_AUTH_METHOD: 'client_secret_jws' }).problems).toEqual([
      'TOKEN_AUTH_METHOD must be one of client_secret_post, client_secret_basic, private_key_jwt, tls_client_auth, client_assertion_file, client_secret_jwt (got "client_secret_jws")',
    ]);
    expect(configError({ ...MINIMAL, LOG_LEVEL: 'verbose' }).problems[0]).toMatch(/^LOG_LEVEL must be one of fatal, error, warn, info/);
  });

  it('reads hosts, without the brackets of an IPv6 literal', () => {
    expect(load({ ...MINIMAL, LISTEN_HOST: '[::1]', ADMIN_HOST: 'proxy.internal' })).toMatchObject({
      listenHost: '::1',
      adminHost: 'proxy.internal',
    });
    expect(configError({ ...MINIMAL, LISTEN_HOST: 'not a host!' }).problems[0]).toMatch(/^LISTEN_HOST must be a host name or IP address/);
  });
});

describe('loadConfig URL rules', () => {
  it.each([
    ['https://gw.example.com', 'https://gw.example.com'],
    ['https://gw.example.com/', 'https://gw.example.com'],
    ['https://gw.example.com/gw', 'https://gw.example.com/gw'],
    ['https://gw.example.com/gw/', 'https://gw.example.com/gw'],
    ['https://GW.Example.com:8443/gw', 'https://gw.example.com:8443/gw'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['http://localhost:8080/', 'http://localhost:8080'],
    ['http://[::1]:8080', 'http://[::1]:8080'],
  ])('accepts BASE_URL %s as %s', (value, expected) => {
    const config = load({ ...MINIMAL, BASE_URL: value });
    expect(config.baseUrl).toBe(expected);
    expect(config.tokenUrl).toBe(`${expected}/api/v1/oauth2/token`);
  });

  it('allows http: for a non-loopback gateway only with ALLOW_INSECURE_HTTP', () => {
    const problems = configError({ ...MINIMAL, BASE_URL: 'http://gw.example.com' }).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^BASE_URL uses http: for a non-loopback host \(gw\.example\.com\).*ALLOW_INSECURE_HTTP=true/);
    expect(load({ ...MINIMAL, BASE_URL: 'http://gw.example.com', ALLOW_INSECURE_HTTP: 'true' }).baseUrl).toBe('http://gw.example.com');
  });

  it.each([
    ['gw.example.com', /must be an absolute http\(s\) URL \(got "gw\.example\.com"\): https:\/\/host.*, or http:\/\/ for a loopback host/],
    ['ftp://gw.example.com', /must be an absolute http\(s\) URL/],
    ['https://user:pw@gw.example.com', /must not carry credentials/],
    ['https://gw.example.com/?tenant=1', /must not have a query or fragment/],
    ['https://gw.example.com/#top', /must not have a query or fragment/],
  ])('refuses BASE_URL %s', (value, reason) => {
    const problems = configError({ ...MINIMAL, BASE_URL: value }).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^BASE_URL /);
    expect(problems[0]).toMatch(reason);
  });

  it('keeps a password in BASE_URL out of the message', () => {
    expect(configError({ ...MINIMAL, BASE_URL: 'https://user:pw-9x7@gw.example.com' }).message).not.toContain('pw-9x7');
  });

  it.each([
    ['TOKEN_STORE_URL', 'redis:/u:S3cretPW@host', 'TOKEN_STORE_URL must name a host (got "redis:/***@host")'],
    ['TOKEN_STORE_URL', 'redis:///u:S3cretPW@host', 'TOKEN_STORE_URL must name a host (got "redis:///***@host")'],
    ['BASE_URL', 'ftp:/u:S3cretPW@gw', 'BASE_URL must be an absolute http(s) URL (got "ftp:/***@gw")'],
    ['HTTPS_PROXY', 'socks:/u:S3cretPW@px', 'HTTPS_PROXY must be a proxy URL such as http://proxy.example.com:3128 (got "socks:/***@px")'],
  ])('keeps the password of a malformed %s %s out of the message', (env, value, start) => {
    const problems = configError({ ...MINIMAL, [env]: value }).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]!.startsWith(start)).toBe(true);
    expect(problems[0]).not.toContain('S3cretPW');
  });

  it('applies the same rules to TOKEN_URL', () => {
    expect(configError({ ...MINIMAL, TOKEN_URL: 'http://idp.example.com/token' }).problems[0]).toMatch(/^TOKEN_URL uses http:/);
    expect(configError({ ...MINIMAL, TOKEN_URL: 'https://idp.example.com/token?x=1' }).problems[0]).toMatch(
      /^TOKEN_URL must not have a query/,
    );
    expect(load({ ...MINIMAL, TOKEN_URL: 'https://idp.example.com/oauth2/token' }).tokenUrl).toBe('https://idp.example.com/oauth2/token');
  });

  it('keeps the trailing slash of TOKEN_URL: the token endpoint is used as given', () => {
    expect(load({ ...MINIMAL, TOKEN_URL: 'https://idp.example.com/o/token/' }).tokenUrl).toBe('https://idp.example.com/o/token/');
  });

  it('reads the token endpoint from ISSUER_URL instead of defaulting it, keeping the issuer exactly as given', () => {
    for (const issuer of ['https://tenant.auth0.com/', 'https://kc.example.com/realms/tickets', 'https://idp.example.com']) {
      const config = load({ ...MINIMAL, ISSUER_URL: issuer });
      expect(config.issuerUrl).toBe(issuer);
      expect(config.tokenUrl).toBeUndefined();
    }
    expect(load({ ...MINIMAL }, { issuerUrl: 'https://idp.example.com/o' }).issuerUrl).toBe('https://idp.example.com/o');
  });

  it('applies the same rules to ISSUER_URL', () => {
    expect(configError({ ...MINIMAL, ISSUER_URL: 'http://idp.example.com' }).problems).toEqual([
      'ISSUER_URL uses http: for a non-loopback host (idp.example.com); use https, or set ALLOW_INSECURE_HTTP=true to accept sending ' +
        'credentials in clear text',
    ]);
    expect(configError({ ...MINIMAL, ISSUER_URL: 'https://idp.example.com/o#x' }).problems[0]).toMatch(/^ISSUER_URL must not have a query/);
    expect(configError({ ...MINIMAL, ISSUER_URL: 'idp.example.com' }).problems[0]).toMatch(/^ISSUER_URL must be an absolute/);
    expect(load({ ...MINIMAL, ISSUER_URL: 'http://127.0.0.1:8080/realms/t' }).issuerUrl).toBe('http://127.0.0.1:8080/realms/t');
  });

  it('refuses ISSUER_URL with TOKEN_URL, naming both and where each came from', () => {
    expect(
      configError({ ...MINIMAL, ISSUER_URL: 'https://idp.example.com' }, { tokenUrl: 'https://idp.example.com/token' }).problems,
    ).toEqual([
      `ISSUER_URL and TOKEN_URL are both set (ISSUER_URL from the environment, TOKEN_URL from tokenUrl in ${FILE}): ISSUER_URL's ` +
        'metadata names the token endpoint; set only one (ISSUER_URL to read it from the identity provider, TOKEN_URL to name it yourself)',
    ]);
  });

  it('requires BASE_URL', () => {
    expect(configError({ CLIENT_ID: 'app', CLIENT_SECRET: 's' }).problems).toEqual([
      'BASE_URL is required: the gateway base URL, e.g. https://tickets.example.com',
    ]);
  });
});

describe('loadConfig errors', () => {
  it('refuses an unknown file key, naming the nearest key when there is one', () => {
    expect(
      configError(MINIMAL, { baseURL: 'https://gw', listen_port: 1, LISTEN_HOST: 'x', tokenRefreshRaito: 0.5, colour: 'blue' }).problems,
    ).toEqual([
      `baseURL in ${FILE} is not a setting; did you mean baseUrl? (keys are lower camelCase, e.g. baseUrl, clientSecretFile)`,
      `listen_port in ${FILE} is not a setting; did you mean listenPort? (keys are lower camelCase, e.g. baseUrl, clientSecretFile)`,
      `LISTEN_HOST in ${FILE} is not a setting; did you mean listenHost? (keys are lower camelCase, e.g. baseUrl, clientSecretFile)`,
      `tokenRefreshRaito in ${FILE} is not a setting; did you mean tokenRefreshRatio? (keys are lower camelCase, e.g. baseUrl, clientSecretFile)`,
      `colour in ${FILE} is not a setting (keys are lower camelCase, e.g. baseUrl, clientSecretFile)`,
    ]);
  });

  it('suggests no file key for the environment-only CONFIG_FILE', () => {
    expect(configError(MINIMAL, { config_file: '/x.yaml' }).problems).toEqual([
      `config_file in ${FILE} is not a setting (keys are lower camelCase, e.g. baseUrl, clientSecretFile)`,
    ]);
  });

  it('refuses a configuration file that names another, since CONFIG_FILE is read from the environment only', () => {
    expect(configError(MINIMAL, { configFile: '/etc/other.yaml' }).problems).toEqual([
      `configFile in ${FILE}: CONFIG_FILE is read from the environment only (a configuration file cannot name another)`,
    ]);
  });

  it('refuses a BASE_URL that is the gateway API root, saying the proxy adds /api/v1 itself', () => {
    expect(configError({ ...MINIMAL, BASE_URL: 'https://gw.example.com/api/v1/' }).problems).toEqual([
      'BASE_URL ends in /api/v1 (got "https://gw.example.com/api/v1"): the proxy adds /api/v1 itself, so set it to the gateway\'s base URL, https://gw.example.com; a gateway whose API really is at https://gw.example.com/api/v1/api/v1 keeps this value and sets TOKEN_URL=https://gw.example.com/api/v1/api/v1/oauth2/token as well',
    ]);
    expect(configError({ ...MINIMAL, BASE_URL: 'https://gw.example.com/gw/api/v1/oauth2/token' }).problems[0]).toContain(
      "the proxy adds /api/v1 itself, so set it to the gateway's base URL, https://gw.example.com/gw",
    );
  });

  it('accepts a BASE_URL ending in /api/v1 when TOKEN_URL is named explicitly', () => {
    const { config } = loadConfig(
      {
        env: { ...MINIMAL, BASE_URL: 'https://gw.example.com/api/v1', TOKEN_URL: 'https://gw.example.com/api/v1/api/v1/oauth2/token' },
        readFile: () => '',
      },
      {},
    );
    expect(config.baseUrl).toBe('https://gw.example.com/api/v1');
  });

  it('refuses a BASE_URL ending in /api/v1 beside an identity provider, as without it: only a TOKEN_URL under {BASE_URL}/api/v1/ vouches for it', () => {
    const plain = configError({ ...MINIMAL, BASE_URL: 'https://gw.example.com/api/v1' }).problems;
    expect(plain).toHaveLength(1);
    for (const other of [
      { TOKEN_URL: 'https://idp.example.com/oauth2/token' },
      { TOKEN_URL: 'https://gw.example.com/api/v1/oauth2/token' },
      { TOKEN_URL: 'https://gw.example.com/api/v1/api/v1x/token' },
      { ISSUER_URL: 'https://idp.example.com/realms/tickets' },
    ]) {
      expect(configError({ ...MINIMAL, BASE_URL: 'https://gw.example.com/api/v1', ...other }).problems, JSON.stringify(other)).toEqual(
        plain,
      );
    }
  });

  it('says which user the proxy runs as when a file it names is not readable to it', () => {
    const denied = Object.assign(new Error('permission denied'), { code: 'EACCES' });
    const env = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET_FILE: '/run/secret' };
    let message = '';
    try {
      loadSettings({
        env,
        readFile: () => {
          throw denied;
        },
      });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(
      `CLIENT_SECRET_FILE names a file that cannot be read (EACCES; the proxy runs as uid ${process.getuid!()}: make the file readable by it): /run/secret`,
    );
  });

  it('says to name the file inside when a file setting names a directory, listing what it holds, for every file setting alike', () => {
    // A Secret as Kubernetes mounts it: each key a link into the hidden ..data directory.
    const dir = mkdtempSync(join(tmpdir(), 'tap-secret-dir-'));
    mkdirSync(join(dir, '..2026_01_01'));
    writeFileSync(join(dir, '..2026_01_01', 'client-secret'), 'the-secret-in-a-dir\n');
    writeFileSync(join(dir, '..2026_01_01', 'ca.crt'), 'x');
    symlinkSync('..2026_01_01', join(dir, '..data'));
    symlinkSync(join('..data', 'client-secret'), join(dir, 'client-secret'));
    symlinkSync(join('..data', 'ca.crt'), join(dir, 'ca.crt'));
    const empty = mkdtempSync(join(tmpdir(), 'tap-empty-dir-'));
    const env = {
      BASE_URL: 'https://gw.example.com',
      CLIENT_ID: 'app',
      CLIENT_SECRET_FILE: `${dir}/`,
      CA_FILE: dir,
      DPOP: 'on',
      DPOP_KEY_FILE: empty,
    };
    const { problems } = configError(env, undefined, undefined, { real: true });
    expect(problems).toEqual(
      expect.arrayContaining([
        `CLIENT_SECRET_FILE names a directory, not a file (EISDIR): ${dir}/; name the file inside it: one of ${dir}/ca.crt, ${dir}/client-secret`,
        `CA_FILE names a directory, not a file (EISDIR): ${dir}; name the file inside it: one of ${dir}/ca.crt, ${dir}/client-secret`,
        `DPOP_KEY_FILE names a directory, not a file (EISDIR): ${empty}; name the file inside it, such as ${empty}/file`,
      ]),
    );
    expect(problems.join('\n')).not.toContain('the-secret-in-a-dir');
    expect(problems.join('\n')).not.toContain('..data');
  });

  it('refuses a file that is not a mapping', () => {
    expect(configError(MINIMAL, '- baseUrl\n- clientId\n').problems).toEqual([`${FILE} must hold a YAML mapping of settings (got a list)`]);
    expect(configError(MINIMAL, 'just text').problems).toEqual([`${FILE} must hold a YAML mapping of settings (got string)`]);
  });

  it('names the file key and the env name of a bad file value', () => {
    expect(configError(MINIMAL, { adminPort: 'eighty' }).problems).toEqual([
      `adminPort in ${FILE} (ADMIN_PORT) must be a port number from 0 to 65535 (got "eighty")`,
    ]);
  });

  it('carries the settings read and the warnings with a refusal, where no error serializer copies the secret', () => {
    const err = configError({ ...MINIMAL, CLIENT_SECRET: 'carried-secret-5k', TOKEN_SCOPE: 'a,b', LOG_LEVEL: 'chatty' });
    expect(err).toBeInstanceOf(SettingsRefused);
    const refusal = err as SettingsRefused;
    expect(refusal.config.clientSecret).toBe('carried-secret-5k');
    expect(refusal.warnings.map((w) => w.setting)).toEqual(['TOKEN_SCOPE']);
    expect(JSON.stringify(stdSerializers.err(refusal))).not.toContain('carried-secret-5k');
    expect(JSON.stringify(refusal)).not.toContain('carried-secret-5k');
  });

  it('reports every problem at once, each naming its setting', () => {
    const err = configError(
      {
        BASE_URL: 'http://gw.example.com',
        LISTEN_PORT: 'x',
        TOKEN_REFRESH_RATIO: '2',
        TOKEN_AUTH_METHOD: 'basic',
        ACCESS_LOG: 'sometimes',
        CLIENT_SECRET_FILE: SECRET_PATH,
      },
      { tokenCacheMax: 0, bogus: 1 },
    );
    const names = [
      'bogus',
      'LISTEN_PORT',
      'TOKEN_AUTH_METHOD',
      'TOKEN_REFRESH_RATIO',
      'TOKEN_CACHE_MAX',
      'ACCESS_LOG',
      'BASE_URL',
      'CLIENT_SECRET_FILE',
      'CLIENT_ID',
    ];
    expect(err.problems).toHaveLength(names.length);
    for (const name of names) {
      expect(err.problems.filter((p) => p.includes(name))).not.toHaveLength(0);
      expect(err.message).toContain(name);
    }
    expect(err.message).toMatch(/^invalid configuration \(9 problems\):\n {2}- /);
  });

  it('never shows the secret in the message', () => {
    const secret = 'hunter2-S3cr3t';
    const messages = [
      configError({ ...MINIMAL, CLIENT_SECRET: secret, CLIENT_SECRET_FILE: SECRET_PATH, LISTEN_PORT: 'x' }, undefined, {
        [SECRET_PATH]: secret,
      }).message,
      configError({ ...MINIMAL, CLIENT_SECRET: `"${secret}\n`, BASE_URL: 'http://gw.example.com' }).message,
      configError({ ...MINIMAL, CLIENT_SECRET: undefined, LISTEN_PORT: '-1' }, { clientSecret: [secret] }).message,
      configError({ ...MINIMAL, CLIENT_SECRET: undefined, BASE_URL: 'nope' }, { clientSecret: { value: secret } }).message,
      configError({ ...MINIMAL, CLIENT_SECRET: undefined, ADMIN_PORT: '-1' }, { clientSecret: true, client_secret: secret }).message,
    ];
    expect(messages[0]).toContain('both set');
    for (const m of messages) {
      expect(m).toMatch(/BASE_URL|LISTEN_PORT|ADMIN_PORT|CLIENT_SECRET/);
      expect(m).not.toContain(secret);
      expect(m).not.toContain('hunter2');
    }
  });
});

describe('isLoopbackHost', () => {
  it.each(['localhost', 'LOCALHOST', 'api.localhost', '127.0.0.1', '127.1.2.3', '::1', '[::1]', '::ffff:127.0.0.1', '[::ffff:7f00:1]'])(
    'counts %s as loopback',
    (host) => {
      expect(isLoopbackHost(host)).toBe(true);
    },
  );

  it.each(['gw.example.com', 'localhost.example.com', '10.0.0.1', '128.0.0.1', '0.0.0.0', '::', '::2', '::ffff:a00:1'])(
    'does not count %s',
    (host) => {
      expect(isLoopbackHost(host)).toBe(false);
    },
  );
});
