/**
 * The chart refuses, at render, every value the proxy would refuse at start (exit 2, the pod in
 * CrashLoopBackOff), with the proxy's own message: each case runs the real proxy's configuration
 * check on the environment the chart would give it, and a real helm must print every problem the
 * proxy reports.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SETTINGS } from '../../src/config/config.js';
import { ConfigError } from '../../src/core/errors.js';
import { loadSettings } from '../helpers/load-settings.js';
import { helm, type HelmResult } from './helm-binary.js';
import type { Obj } from './k8s-objects.js';

const root = join(import.meta.dirname, '..', '..');
const chart = join(root, 'helm', 'ticket-auth-proxy');
const work = mkdtempSync(join(tmpdir(), 'tap-helm-refusals-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The environment the chart gives the proxy with an existingSecret (CLIENT_ID from the Secret). */
const CHART_ENV: Record<string, string> = {
  BASE_URL: 'https://tickets.example.com',
  TOKEN_AUTH_METHOD: 'client_secret_post',
  CLIENT_ID: 'client-from-the-secret',
  CLIENT_SECRET_FILE: '/var/run/secrets/ticket-auth-proxy/client-secret',
  LISTEN_HOST: '::',
  LISTEN_PORT: '8180',
  ADMIN_HOST: '::',
  ADMIN_PORT: '8181',
  LOG_LEVEL: 'info',
  ACCESS_LOG: 'false',
  SHUTDOWN_DELAY_S: '0',
  SHUTDOWN_TIMEOUT_S: '15',
};

/** The DPoP key a Secret would hold: an EC P-256 private key, made for this run. */
const DPOP_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;

/** What the proxy says at start about this environment: its problems, none when it starts. */
function proxyProblems(env: Record<string, string>): string[] {
  try {
    // A secret file holds a secret; the projected token file a JWT; the mounted DPoP key a key.
    const jwt = ['{"alg":"RS256","typ":"JWT"}', '{"sub":"system:serviceaccount:tickets:proxy","exp":4102444800}']
      .map((part) => Buffer.from(part).toString('base64url'))
      .join('.');
    const readFile = (path: string): string =>
      path.endsWith('/token') ? `${jwt}.c2ln` : path.startsWith('/etc/ticket-auth-proxy/dpop/') ? DPOP_KEY : 'a-secret';
    loadSettings({ env, readFile });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
}

let files = 0;
/** A values file holding `values` over an existing Secret and a good baseUrl (a file, so every value stays a string). */
function valuesFile(values: Record<string, unknown>): string {
  const file = join(work, `values-${files++}.yaml`);
  writeFileSync(file, JSON.stringify({ existingSecret: 'creds', baseUrl: 'https://tickets.example.com', ...values }));
  return file;
}

/** helm template and helm lint of the same values. */
async function helmWith(values: Record<string, unknown>): Promise<{ template: HelmResult; lint: HelmResult }> {
  const file = valuesFile(values);
  const [template, lint] = await Promise.all([helm(['template', 'rel', chart, '-f', file]), helm(['lint', '--strict', chart, '-f', file])]);
  return { template, lint };
}

/** The schema's refusal, as helm prints it before rendering anything. */
const SCHEMA = "values don't meet the specifications of the schema";

/**
 * The proxy refuses `env` at start, and the chart refuses `values` with every one of the proxy's
 * messages, at render (templates/_validate.tpl): in helm template and install, and in helm lint,
 * which must fail on them too (it prints a template's refusal in quotes).
 */
async function expectRefusedLikeTheProxy(values: Record<string, unknown>, env: Record<string, string>): Promise<string> {
  const problems = proxyProblems({ ...CHART_ENV, ...env });
  expect(problems.length, 'the proxy itself refuses this environment').toBeGreaterThan(0);
  const { template, lint } = await helmWith(values);
  expect(template.code, 'helm template should have failed').not.toBe(0);
  expect(template.stderr).not.toContain(SCHEMA);
  for (const problem of problems) expect(template.stderr).toContain(problem);
  expect(lint.code, 'helm lint should have failed').not.toBe(0);
  expect(lint.stdout + lint.stderr).toContain('1 chart(s) failed');
  for (const problem of problems) expect(lint.stdout).toContain(problem.replaceAll('"', '\\"'));
  return template.stderr;
}

/**
 * The proxy refuses `env` at start, and values.schema.json refuses `values` before anything
 * renders, naming the value (`at '/baseUrl': value must be '...'`), in helm template and in helm lint.
 */
async function expectRefusedBySchema(values: Record<string, unknown>, env: Record<string, string>, message: string): Promise<void> {
  expect(proxyProblems({ ...CHART_ENV, ...env }).length, 'the proxy itself refuses this environment').toBeGreaterThan(0);
  const { template, lint } = await helmWith(values);
  expect(template.code, 'helm template should have failed').not.toBe(0);
  expect(template.stderr).toContain(SCHEMA);
  expect(template.stderr).toContain(message);
  expect(lint.code, 'helm lint should have failed').not.toBe(0);
  expect(lint.stdout).toContain(message);
  expect(lint.stdout + lint.stderr).toContain('1 chart(s) failed');
}

/** The proxy accepts `env`, and helm template and helm lint --strict accept `values`. */
async function expectAccepted(values: Record<string, unknown>, env: Record<string, string>): Promise<void> {
  expect(proxyProblems({ ...CHART_ENV, ...env })).toEqual([]);
  const { template, lint } = await helmWith(values);
  expect(template.stderr).toBe('');
  expect(template.code).toBe(0);
  expect(lint.stdout).not.toContain('[ERROR]');
  expect(lint.code).toBe(0);
}

const MUST_BE = (value: string, text: string): string => `at '/${value}': value must be '${text}`;
const WITHOUT_API_V1 = 'the gateway base URL without /api/v1, which the proxy adds';
const HTTPS_ONLY = 'https, or http: for a loopback host only, unless allowInsecureHttp is true';

describe('chart values the proxy refuses at start', () => {
  it.each([
    [
      'a baseUrl ending in /api/v1',
      { baseUrl: 'https://tickets.example.com/api/v1' },
      { BASE_URL: 'https://tickets.example.com/api/v1' },
      MUST_BE('baseUrl', WITHOUT_API_V1),
    ],
    [
      'a baseUrl ending in /api/v1/ (as normalised)',
      { baseUrl: 'https://Tickets.Example.com:443/gw/API/v1/' },
      { BASE_URL: 'https://Tickets.Example.com:443/gw/API/v1/' },
      MUST_BE('baseUrl', WITHOUT_API_V1),
    ],
    [
      'a baseUrl naming the token endpoint, even with a tokenUrl',
      { baseUrl: 'https://tickets.example.com/api/v1/oauth2/token', tokenUrl: 'https://idp.example/token' },
      { BASE_URL: 'https://tickets.example.com/api/v1/oauth2/token', TOKEN_URL: 'https://idp.example/token' },
      MUST_BE('baseUrl', 'the gateway base URL without /api/v1/oauth2/token'),
    ],
    [
      'an http: baseUrl off loopback',
      { baseUrl: 'http://tickets.example.com' },
      { BASE_URL: 'http://tickets.example.com' },
      MUST_BE('baseUrl', HTTPS_ONLY),
    ],
    [
      'an http: tokenUrl off loopback',
      { tokenUrl: 'http://idp.example/token' },
      { TOKEN_URL: 'http://idp.example/token' },
      MUST_BE('tokenUrl', HTTPS_ONLY),
    ],
    [
      'a baseUrl that is no URL',
      { baseUrl: 'tickets.example.com' },
      { BASE_URL: 'tickets.example.com' },
      MUST_BE('baseUrl', 'an absolute https URL, e.g. https://tickets.example.com'),
    ],
    [
      'a baseUrl of another scheme',
      { baseUrl: 'ftp://tickets.example.com' },
      { BASE_URL: 'ftp://tickets.example.com' },
      MUST_BE('baseUrl', 'an absolute https URL'),
    ],
    [
      'a missing baseUrl',
      { baseUrl: '' },
      { BASE_URL: '' },
      MUST_BE('baseUrl', 'the gateway base URL, e.g. https://tickets.example.com (required)'),
    ],
    [
      'a baseUrl of spaces',
      { baseUrl: '   ' },
      { BASE_URL: '   ' },
      MUST_BE('baseUrl', 'the gateway base URL, e.g. https://tickets.example.com (required)'),
    ],
    [
      'credentials in the baseUrl',
      { baseUrl: 'https://user:pw@tickets.example.com' },
      { BASE_URL: 'https://user:pw@tickets.example.com' },
      MUST_BE('baseUrl', 'a URL without user information (user:password@)'),
    ],
    [
      'a query in the tokenUrl',
      { tokenUrl: 'https://idp.example/token?tenant=a' },
      { TOKEN_URL: 'https://idp.example/token?tenant=a' },
      MUST_BE('tokenUrl', 'a URL without a query or fragment'),
    ],
    [
      'a tokenScope of spaces',
      { tokenScope: '  ' },
      { TOKEN_SCOPE: '  ' },
      MUST_BE('tokenScope', 'empty, or the scopes to request, separated by spaces'),
    ],
    [
      'an egress proxy URL with a path',
      { egressProxy: { httpsProxy: 'http://proxy.example:3128/x' } },
      { HTTPS_PROXY: 'http://proxy.example:3128/x' },
      MUST_BE('egressProxy/httpsProxy', 'a proxy URL such as http://proxy.example.com:3128'),
    ],
    [
      'an egress proxy of another scheme',
      { egressProxy: { httpProxy: 'socks5://proxy.example:1080' } },
      { HTTP_PROXY: 'socks5://proxy.example:1080' },
      MUST_BE('egressProxy/httpProxy', 'a proxy URL such as http://proxy.example.com:3128'),
    ],
    [
      'an egress proxy port out of range',
      { egressProxy: { httpProxy: 'proxy.example:65536' } },
      { HTTP_PROXY: 'proxy.example:65536' },
      MUST_BE('egressProxy/httpProxy', 'a proxy URL such as http://proxy.example.com:3128'),
    ],
    [
      'a DPoP key while DPoP is off',
      { dpop: { existingSecret: 'dpop-key' } },
      { DPOP_KEY_FILE: '/etc/ticket-auth-proxy/dpop/dpop-key.pem' },
      MUST_BE('dpop/existingSecret', 'empty while dpop.mode is "off"'),
    ],
    [
      'a DPoP algorithm while DPoP is off',
      { dpop: { mode: 'off', alg: 'EdDSA' } },
      { DPOP_ALG: 'EdDSA' },
      MUST_BE('dpop/alg', 'empty while dpop.mode is "off"'),
    ],
    [
      'a DPoP algorithm the proxy does not know',
      { dpop: { mode: 'on', alg: 'ES999' } },
      { DPOP: 'on', DPOP_ALG: 'ES999' },
      "at '/dpop/alg': value must be one of '', 'ES256'",
    ],
  ])('refuses %s in its schema, naming the value, in helm template and helm lint', async (_name, values, env, message) => {
    await expectRefusedBySchema(values, env, message);
  });

  it.each([
    [
      'a DPoP key and algorithm from extraEnv without DPOP',
      {
        extraEnv: [
          { name: 'DPOP_KEY_FILE', value: '/k.pem' },
          { name: 'DPOP_ALG', value: 'ES256' },
        ],
      },
      { DPOP_KEY_FILE: '/k.pem', DPOP_ALG: 'ES256' },
      'extraEnv: DPOP_KEY_FILE is set but DPOP is off',
    ],
    [
      'an unknown DPOP from extraEnv beside a key',
      { dpop: { mode: 'on', existingSecret: 'dpop-key' }, extraEnv: [{ name: 'DPOP', value: 'always' }] },
      { DPOP: 'always', DPOP_KEY_FILE: '/etc/ticket-auth-proxy/dpop/dpop-key.pem' },
      'extraEnv: DPOP must be one of off, on, required',
    ],
    [
      'an http: baseUrl off loopback that extraEnv makes insecure in name only',
      { baseUrl: 'http://tickets.example.com', allowInsecureHttp: true, extraEnv: [{ name: 'ALLOW_INSECURE_HTTP', value: 'false' }] },
      { BASE_URL: 'http://tickets.example.com', ALLOW_INSECURE_HTTP: 'false' },
      'baseUrl: BASE_URL uses http: for a non-loopback host (tickets.example.com)',
    ],
  ])('refuses %s as it renders, with the proxy message, in helm template and helm lint', async (_name, values, env, named) => {
    expect(await expectRefusedLikeTheProxy(values, env)).toContain(named);
  });

  it('accepts the DPoP settings the proxy accepts: a generated key, a mounted key, an algorithm for either', async () => {
    for (const [values, env] of [
      [{ dpop: { mode: 'on' } }, { DPOP: 'on' }],
      [{ dpop: { mode: 'required', alg: 'EdDSA' } }, { DPOP: 'required', DPOP_ALG: 'EdDSA' }],
      [
        { dpop: { mode: 'on', existingSecret: 'dpop-key', existingSecretKey: 'tls.key', alg: 'ES256' } },
        { DPOP: 'on', DPOP_KEY_FILE: '/etc/ticket-auth-proxy/dpop/tls.key', DPOP_ALG: 'ES256' },
      ],
    ] as const) {
      await expectAccepted(values, env);
    }
  });

  it('refuses the same port for both listeners, which the proxy cannot open at start, in helm template and helm lint', async () => {
    const { template, lint } = await helmWith({ listenPort: 9000, adminPort: 9000 });
    const message =
      'listenPort and adminPort are both 9000: the admin listener (ADMIN_HOST, ADMIN_PORT) cannot listen on [::]:9000 (EADDRINUSE)';
    expect(template.code).not.toBe(0);
    expect(template.stderr).toContain(message);
    expect(lint.code).not.toBe(0);
    expect(lint.stdout).toContain(message);
  });

  it('accepts what the proxy accepts: an http: baseUrl on loopback, off loopback with allowInsecureHttp, an egress proxy without a scheme', async () => {
    for (const [values, env] of [
      [{ baseUrl: 'http://127.0.0.1:8080/' }, { BASE_URL: 'http://127.0.0.1:8080/' }],
      [
        { baseUrl: 'http://tickets.internal', allowInsecureHttp: true },
        { BASE_URL: 'http://tickets.internal', ALLOW_INSECURE_HTTP: 'true' },
      ],
      [
        { baseUrl: 'https://tickets.example.com/api/v1', tokenUrl: 'https://tickets.example.com/api/v1/api/v1/oauth2/token' },
        { BASE_URL: 'https://tickets.example.com/api/v1', TOKEN_URL: 'https://tickets.example.com/api/v1/api/v1/oauth2/token' },
      ],
      [{ egressProxy: { httpsProxy: 'proxy.example:3128', noProxy: '.svc' } }, { HTTPS_PROXY: 'proxy.example:3128', NO_PROXY: '.svc' }],
    ] as const) {
      await expectAccepted(values, env);
    }
  });
});

describe('the base URLs and token endpoints the chart refuses', () => {
  // Each URL against the proxy's own check and the schema's patterns (values.schema.json cannot
  // call the proxy's URL parser): the two must agree, whichever way.
  const baseUrls = [
    'https://tickets.example.com',
    ' https://tickets.example.com/ ',
    'HTTPS://Tickets.Example.com:8443/gw',
    'https://tickets.example.com/api/v10',
    'https://tickets.example.com/api/v1x',
    'https://tickets.example.com/gw/api/v1',
    'https://tickets.example.com/Api/V1//',
    'https://tickets.example.com/api/v1?',
    'https://tickets.example.com/api/v1/oauth2/token/',
    'https://tickets.example.com/?tenant=a',
    'https://tickets.example.com/#top',
    'https://tickets.example.com/#',
    'https://user@tickets.example.com',
    'http://localhost:8080',
    'http://LocalHost',
    'http://tickets.localhost/gw',
    'http://127.0.0.1',
    'http://127.10.20.30:8080/gw',
    'http://[::1]:8080',
    'http://[::ffff:127.0.0.1]',
    'http://tickets.example.com',
    'http://localhost.example.com',
    'http://127.0.0.1.nip.io',
    'http://10.0.0.1:8080',
    'http://[::2]',
    'tickets.example.com',
    'https://',
    'ws://tickets.example.com',
  ];
  const tokenUrls = [
    'https://login.example.com/oauth2/token',
    'https://login.example.com/tenant/oauth2/v2.0/token',
    'http://127.0.0.1:9000/token',
    'http://login.example.com/token',
    'https://login.example.com/token?tenant=a',
    'https://client:secret@login.example.com/token',
    '/oauth2/token',
    '  ',
  ];
  const cases = [
    ...baseUrls.map((url) => ['baseUrl', 'BASE_URL', url] as const),
    ...tokenUrls.map((url) => ['tokenUrl', 'TOKEN_URL', url] as const),
    ...tokenUrls.map((url) => ['issuerUrl', 'ISSUER_URL', url.replace('/token', '/realms/tickets')] as const),
  ];
  it.each(cases)('refuses the %s (%s) %j exactly when the proxy refuses it', async (value, setting, url) => {
    const refusedByProxy = proxyProblems({ ...CHART_ENV, [setting]: url }).length > 0;
    const { lint } = await helmWith({ [value]: url });
    expect(lint.code !== 0, lint.stdout).toBe(refusedByProxy);
  });
});

describe('helm lint', () => {
  it.each([
    [
      'the defaults',
      [],
      ["at '/baseUrl': value must be 'the gateway base URL", "at '/existingSecret': value must be 'the name of a Secret"],
    ],
    [
      'a baseUrl ending in /api/v1',
      ['--set', 'existingSecret=creds', '--set', 'baseUrl=https://tickets.example.com/api/v1'],
      [MUST_BE('baseUrl', WITHOUT_API_V1)],
    ],
    [
      'an http: gateway',
      ['--set', 'existingSecret=creds', '--set', 'baseUrl=http://tickets.example.com'],
      [MUST_BE('baseUrl', HTTPS_ONLY)],
    ],
  ])('fails on %s, which install refuses, naming the values', async (_name, args, messages) => {
    const result = await helm(['lint', chart, ...args]);
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('1 chart(s) linted, 1 chart(s) failed');
    for (const message of messages) expect(result.stdout).toContain(message);
    const install = await helm(['template', 'rel', chart, ...args]);
    expect(install.code).not.toBe(0);
  });
});

describe("the chart's refusals", () => {
  it("stop helm lint as they stop helm template: helm's fail, which lint takes for a note and renders on, is called only by ticket-auth-proxy.fail", () => {
    const templates = join(chart, 'templates');
    const calls = readdirSync(templates).flatMap((file) =>
      [...readFileSync(join(templates, file), 'utf8').matchAll(/(?:\{\{-?|\()\s*fail\s/g)].map(() => file),
    );
    expect(calls).toEqual(['_helpers.tpl']);
    const helpers = readFileSync(join(templates, '_helpers.tpl'), 'utf8');
    expect(helpers).toMatch(/define "ticket-auth-proxy\.fail" -}}\n\{\{- fail \. -}}\n\{\{- include \(replace "\\n" " " \.\) dict -}}/);
  });
});

/** A value of each kind that the proxy refuses. */
function badValue(kind: (typeof SETTINGS)[number]['kind']): string | undefined {
  switch (kind.type) {
    case 'int':
      return kind.min > 0 ? String(kind.min - 1) : 'many';
    case 'number':
      return kind.exclusive ? String(kind.max) : '-0.5';
    case 'port':
      return '70000';
    case 'mode':
      return '0999';
    case 'host':
      return 'not a host!';
    case 'bool':
      return 'maybe';
    case 'enum':
      return 'loud';
    case 'params':
      return 'scope=a&=b&client_id=c';
    case 'string':
    case 'path':
      return '   ';
    case 'url':
      return undefined; // baseUrl and tokenUrl, above
  }
}

describe('extraEnv values the proxy refuses at start', () => {
  it('refuses a bad value of every setting, each with the proxy message', async () => {
    const extra = SETTINGS.map((s) => ({ name: s.env, value: badValue(s.kind) })).filter(
      (e): e is { name: string; value: string } => e.value !== undefined,
    );
    expect(extra.length).toBeGreaterThan(30);
    const stderr = await expectRefusedLikeTheProxy({ extraEnv: extra }, Object.fromEntries(extra.map((e) => [e.name, e.value])));
    expect(stderr).toContain('extraEnv: UPSTREAM_TIMEOUT_MS must be an integer of at least 1 (got "0")');
  });

  it.each([
    ['a number out of its range', [{ name: 'TOKEN_REFRESH_RATIO', value: '0' }]],
    ['a number that is no number', [{ name: 'SHUTDOWN_TIMEOUT_S', value: 'soon' }]],
    ['an integer with a fraction', [{ name: 'TOKEN_CACHE_MAX', value: '1.5' }]],
    ['an integer past its largest', [{ name: 'TOKEN_FETCH_TIMEOUT_MS', value: '120001' }]],
    ['a number past its largest', [{ name: 'OTEL_TRACES_SAMPLER_ARG', value: '1.5' }]],
    ['a field TOKEN_PARAMS may not set', [{ name: 'TOKEN_PARAMS', value: 'audience=x&grant_type=y' }]],
    ['a client secret beside the mounted file', [{ name: 'CLIENT_SECRET', value: 's' }]],
    [
      'a signing key without private_key_jwt',
      [
        { name: 'CLIENT_ASSERTION_KEY_FILE', value: '/k.pem' },
        { name: 'CLIENT_ASSERTION_ALG', value: 'ES256' },
      ],
    ],
    ['tls_client_auth without the client certificate', [{ name: 'TOKEN_AUTH_METHOD', value: 'tls_client_auth' }]],
    ["private_key_jwt beside the chart's secret and without a key", [{ name: 'TOKEN_AUTH_METHOD', value: 'private_key_jwt' }]],
    ['a client certificate without its key', [{ name: 'TLS_CLIENT_CERT_FILE', value: '/c.pem' }]],
    ['a percent-encoded field TOKEN_PARAMS may not set', [{ name: 'TOKEN_PARAMS', value: 'client%5Fid=x&%73cope=y' }]],
    ['an egress proxy port out of range', [{ name: 'HTTP_PROXY', value: 'proxy.example:99999' }]],
    [
      'ISSUER_URL beside TOKEN_URL',
      [
        { name: 'ISSUER_URL', value: 'https://idp.example/realms/tickets' },
        { name: 'TOKEN_URL', value: 'https://idp.example/realms/tickets/protocol/openid-connect/token' },
      ],
    ],
    ['an http: ISSUER_URL off loopback', [{ name: 'ISSUER_URL', value: 'http://idp.example/realms/tickets' }]],
    ['a socket beside the TCP address the chart sets', [{ name: 'LISTEN_SOCKET', value: '/var/run/tap/proxy.sock' }]],
    ['a socket path longer than a socket address holds', [{ name: 'LISTEN_SOCKET', value: `/var/run/${'x'.repeat(100)}.sock` }]],
    ['a socket mode without a socket', [{ name: 'LISTEN_SOCKET_MODE', value: '0600' }]],
  ])('refuses %s', async (_name, extra) => {
    await expectRefusedLikeTheProxy({ extraEnv: extra }, Object.fromEntries(extra.map((e) => [e.name, e.value])));
  });

  it("refuses the sidecar's socket with a mode that lets no one connect, naming listenSocketMode", async () => {
    const socket = { LISTEN_HOST: '', LISTEN_PORT: '', LISTEN_SOCKET: '/var/run/tap/proxy.sock', READINESS: 'started' };
    const stderr = await expectRefusedLikeTheProxy(
      { mode: 'sidecar', sidecar: { preview: true }, listenSocket: '/var/run/tap/proxy.sock', listenSocketMode: '0o444' },
      { ...socket, LISTEN_SOCKET_MODE: '0o444' },
    );
    expect(stderr).toContain('listenSocketMode: LISTEN_SOCKET_MODE 0444 lets no one connect');
    await expectAccepted(
      { mode: 'sidecar', sidecar: { preview: true }, listenSocket: '/var/run/tap/proxy.sock', listenSocketMode: '0o600' },
      { ...socket, LISTEN_SOCKET_MODE: '0o600' },
    );
  });

  it('refuses a TOKEN_PARAMS field with an empty name, and only for that, as the proxy does', async () => {
    const extra = [{ name: 'TOKEN_PARAMS', value: 'scope=a&=b' }];
    const stderr = await expectRefusedLikeTheProxy({ extraEnv: extra }, { TOKEN_PARAMS: 'scope=a&=b' });
    expect(stderr).not.toContain('may not set scope');
  });

  it("never shows an egress proxy's credentials, with a scheme or without", async () => {
    const extra = [
      { name: 'HTTPS_PROXY', value: 'http://user:pw@proxy.example:3128/x' },
      { name: 'HTTP_PROXY', value: 'user:pw@proxy.example:3128/x' },
    ];
    const stderr = await expectRefusedLikeTheProxy(
      { extraEnv: extra },
      { HTTPS_PROXY: 'http://user:pw@proxy.example:3128/x', HTTP_PROXY: 'user:pw@proxy.example:3128/x' },
    );
    expect(stderr).toContain(
      'extraEnv: HTTP_PROXY must be a proxy URL such as http://proxy.example.com:3128 (got "***@proxy.example:3128/x")',
    );
    expect(stderr).not.toContain('pw');
  });

  it('accepts the egress proxies the proxy accepts: an IPv6 address, credentials, no scheme', async () => {
    const extra = [
      { name: 'HTTPS_PROXY', value: 'http://[::1]:3128' },
      { name: 'HTTP_PROXY', value: 'user:pw@proxy.example:3128/' },
    ];
    await expectAccepted({ extraEnv: extra }, Object.fromEntries(extra.map((e) => [e.name, e.value])));
  });

  it('refuses a secret beside the projected token in secretless mode', async () => {
    const extra = [
      { name: 'CLIENT_SECRET', value: 's' },
      { name: 'CLIENT_ASSERTION_KID', value: 'k' },
    ];
    await expectRefusedLikeTheProxy(
      { existingSecret: '', clientId: 'ticket-proxy', auth: { serviceAccountToken: { enabled: true, audience: 'a' } }, extraEnv: extra },
      {
        TOKEN_AUTH_METHOD: 'client_assertion_file',
        CLIENT_SECRET_FILE: '',
        CLIENT_ASSERTION_FILE: '/token',
        CLIENT_SECRET: 's',
        CLIENT_ASSERTION_KID: 'k',
      },
    );
  });

  it('accepts good values of the same settings', async () => {
    const extra = [
      { name: 'TOKEN_REFRESH_RATIO', value: '.5' },
      { name: 'TOKEN_CACHE_MAX', value: ' 10 ' },
      { name: 'PASSTHROUGH_BASIC', value: 'Yes' },
      { name: 'TOKEN_PARAMS', value: 'audience=https%3A%2F%2Fapi&resource=x' },
      { name: 'SHUTDOWN_DELAY_S', value: '2.5' },
      { name: 'LISTEN_HOST', value: '[::]' },
      { name: 'UNRELATED_VARIABLE', value: 'anything' },
    ];
    await expectAccepted({ extraEnv: extra }, Object.fromEntries(extra.map((e) => [e.name, e.value])));
  });
});

describe('the OpenTelemetry settings the proxy refuses at start', () => {
  const COLLECTOR = 'http://otel-collector.observability:4318';
  /** The collector's API key the headers carry: never in a message. */
  const KEY = 'k3y-0f-the-c0llector';

  it.each([
    ['a protocol other than http/protobuf', { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }],
    ['headers that are no key=value pairs', { OTEL_EXPORTER_OTLP_HEADERS: `api-key ${KEY}` }],
    ['headers with a name left empty', { OTEL_EXPORTER_OTLP_HEADERS: `=${KEY}` }],
    ['headers whose percent-encoding decodes nothing', { OTEL_EXPORTER_OTLP_HEADERS: `api-key=${KEY}%zz` }],
    ['headers whose percent-encoding is no UTF-8', { OTEL_EXPORTER_OTLP_HEADERS: `api-key=${KEY}%C0%AF` }],
    ['resource attributes that are no key=value pairs', { OTEL_RESOURCE_ATTRIBUTES: 'team' }],
    ['an endpoint with credentials', { OTEL_EXPORTER_OTLP_ENDPOINT: `http://tenant:${KEY}@otel-collector:4318` }],
    ['an endpoint with credentials and no scheme', { OTEL_EXPORTER_OTLP_ENDPOINT: `tenant:${KEY}@otel-collector:4318` }],
    ['an endpoint without a scheme', { OTEL_EXPORTER_OTLP_ENDPOINT: 'otel-collector:4318' }],
    ['a gRPC endpoint', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://otel-collector:4317' }],
    ['an endpoint whose port is out of range', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:70000' }],
    ['an endpoint whose IPv4 address is out of range', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://10.0.0.256:4318' }],
    [
      'headers in the clear to a collector off loopback',
      { OTEL_EXPORTER_OTLP_ENDPOINT: COLLECTOR, OTEL_EXPORTER_OTLP_HEADERS: `api-key=${KEY}` },
    ],
    [
      'headers in the clear to the traces endpoint, which wins over the base endpoint',
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel-collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://OTel-Collector:80/v1/traces',
        OTEL_EXPORTER_OTLP_HEADERS: `api-key=${KEY}`,
      },
    ],
    ['an unknown sampler', { OTEL_TRACES_SAMPLER: 'ratio' }],
    [
      'every one of them at once',
      {
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_HEADERS: KEY,
        OTEL_RESOURCE_ATTRIBUTES: 'team',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
      },
    ],
  ])('refuses %s from extraEnv, with the proxy message, never the key', async (_name, env: Record<string, string>) => {
    const extraEnv = Object.entries(env).map(([name, value]) => ({ name, value }));
    const stderr = await expectRefusedLikeTheProxy({ extraEnv }, env);
    expect(stderr).toContain('extraEnv: OTEL_');
    expect(stderr).not.toContain(KEY);
  });

  it('accepts what the proxy accepts: headers to a loopback collector, over https, or with ALLOW_INSECURE_HTTP; any endpoint with OTEL_SDK_DISABLED', async () => {
    for (const env of [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.1:4318', OTEL_EXPORTER_OTLP_HEADERS: `api-key=${KEY}, x-tenant=a%20b` },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318/', OTEL_EXPORTER_OTLP_HEADERS: `api-key=${KEY}` },
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com',
        OTEL_EXPORTER_OTLP_HEADERS: `api-key=${KEY}`,
        OTEL_RESOURCE_ATTRIBUTES: 'team=a, env=%E2%82%AC',
      },
      { OTEL_EXPORTER_OTLP_ENDPOINT: COLLECTOR, OTEL_EXPORTER_OTLP_HEADERS: `api-key=${KEY}`, ALLOW_INSECURE_HTTP: 'true' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: COLLECTOR, OTEL_EXPORTER_OTLP_HEADERS: ' , ' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'otel-collector:4318', OTEL_SDK_DISABLED: 'true' },
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
    ] as Record<string, string>[]) {
      await expectAccepted({ extraEnv: Object.entries(env).map(([name, value]) => ({ name, value })) }, env);
    }
  });

  it.each([
    'http://otel-collector:4318',
    'HTTPS://Otel.Example.com:443/otlp/',
    'http:otel-collector:4318',
    'http:\\\\otel-collector:4318',
    'http:///otel-collector',
    'http://@otel-collector:4318',
    'http://:@otel-collector:4318',
    'http://tenant@otel-collector:4318',
    'http://::@otel-collector:4318',
    'http://tenant@',
    'http://otel-collector:',
    'http://otel-collector:04318',
    'http://otel-collector:65536',
    'http://otel-collector:43 18',
    'http://otel collector:4318',
    'http://otel_collector:4318',
    'http://otel%2Dcollector:4318',
    'http://otel%zzcollector:4318',
    'http://[::1]:4318',
    'http://[::1',
    'http://127.0.0.1:4318',
    'http://127.1',
    'http://0x7f.1',
    'http://2130706433',
    'http://4294967296',
    'http://1.2.3.4.5',
    'http://1.2.3.4.',
    'http://08.1.1.1',
    'http://collector.1',
    'http://1.0x',
    'https://otel.example.com/v1/traces?tenant=a#x',
    'otel-collector:4318',
    '//otel-collector:4318',
    'grpc://otel-collector:4317',
    'localhost:4318',
  ])('refuses the collector %j with headers exactly when the proxy refuses it', async (endpoint) => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_HEADERS: 'api-key=x' };
    const refusedByProxy = proxyProblems({ ...CHART_ENV, ...env }).length > 0;
    const { lint } = await helmWith({ extraEnv: Object.entries(env).map(([name, value]) => ({ name, value })) });
    expect(lint.code !== 0, lint.stdout).toBe(refusedByProxy);
  });
});

describe("the chart's tracing values", () => {
  const tracing = (values: Record<string, unknown>): Record<string, unknown> => ({ tracing: values });

  it.each([
    [
      'an endpoint without a scheme',
      tracing({ endpoint: 'otel-collector:4318' }),
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'otel-collector:4318' },
      'tracing.endpoint: OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http or https URL',
    ],
    [
      'an endpoint with credentials',
      tracing({ endpoint: 'http://tenant:k3y@otel-collector:4318' }),
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://tenant:k3y@otel-collector:4318' },
      '(got "http://***@otel-collector:4318")',
    ],
    [
      'headers from a Secret to an http collector off loopback',
      tracing({ endpoint: 'http://otel-collector:4318', existingSecret: 'otlp' }),
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=from-the-secret' },
      "tracing.existingSecret: OTEL_EXPORTER_OTLP_HEADERS would be sent in the clear to otel-collector:4318 (OTEL_EXPORTER_OTLP_ENDPOINT is http): use an https collector, a loopback one, or set ALLOW_INSECURE_HTTP=true (in the chart's values: allowInsecureHttp: true)",
    ],
    [
      'a ratio past 1',
      tracing({ endpoint: 'https://otel.example.com', samplerArg: 1.5 }),
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com', OTEL_TRACES_SAMPLER_ARG: '1.5' },
      'tracing.samplerArg: OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "1.5")',
    ],
    [
      'a ratio that is no number',
      tracing({ endpoint: 'https://otel.example.com', samplerArg: 'half' }),
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com', OTEL_TRACES_SAMPLER_ARG: 'half' },
      'tracing.samplerArg: OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "half")',
    ],
  ])('refuses %s with the proxy message, naming the value', async (_name, values, env, named) => {
    expect(await expectRefusedLikeTheProxy(values, env)).toContain(named);
  });

  it('refuses an unknown sampler in its schema, with the proxy choices', async () => {
    await expectRefusedBySchema(
      tracing({ endpoint: 'https://otel.example.com', sampler: 'ratio' }),
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com', OTEL_TRACES_SAMPLER: 'ratio' },
      "at '/tracing/sampler': value must be one of '', 'always_on'",
    );
  });

  it('refuses a sampler, a ratio or headers without a collector, in helm template and helm lint', async () => {
    const { template, lint } = await helmWith(tracing({ sampler: 'traceidratio', samplerArg: 0.5, existingSecret: 'otlp' }));
    const message = 'tracing.sampler and tracing.samplerArg and tracing.existingSecret are set without tracing.endpoint: set the collector';
    expect(template.code).not.toBe(0);
    expect(template.stderr).toContain(message);
    expect(lint.code).not.toBe(0);
    expect(lint.stdout).toContain(message);
  });

  it('accepts what the proxy accepts: headers from a Secret over https, to loopback, or with allowInsecureHttp; a ratio of 0', async () => {
    for (const [values, env] of [
      [
        tracing({ endpoint: 'https://otel.example.com', existingSecret: 'otlp', sampler: 'traceidratio', samplerArg: 0 }),
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com',
          OTEL_EXPORTER_OTLP_HEADERS: 'api-key=x',
          OTEL_TRACES_SAMPLER: 'traceidratio',
          OTEL_TRACES_SAMPLER_ARG: '0',
        },
      ],
      [
        tracing({ endpoint: 'http://127.0.0.1:4318', existingSecret: 'otlp' }),
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=x' },
      ],
      [
        { allowInsecureHttp: true, ...tracing({ endpoint: 'http://otel-collector:4318', existingSecret: 'otlp', samplerArg: '0.25' }) },
        {
          ALLOW_INSECURE_HTTP: 'true',
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318',
          OTEL_EXPORTER_OTLP_HEADERS: 'api-key=x',
          OTEL_TRACES_SAMPLER_ARG: '0.25',
        },
      ],
    ] as const) {
      await expectAccepted(values, env);
    }
  });
});

/** Every node of a JSON document, depth first. */
function* nodes(value: unknown): Generator<Record<string, unknown>> {
  if (value === null || typeof value !== 'object') return;
  if (!Array.isArray(value)) yield value as Record<string, unknown>;
  for (const child of Object.values(value)) yield* nodes(child);
}

describe('values.schema.json', () => {
  const schema = JSON.parse(readFileSync(join(chart, 'values.schema.json'), 'utf8')) as Obj;
  const choices = (setting: string): string[] => {
    const kind = SETTINGS.find((s) => s.env === setting)!.kind;
    return kind.type === 'enum' ? [...kind.values] : [];
  };

  it("offers the proxy's own choices for the values that are its settings", () => {
    expect(schema.properties.logLevel.enum).toEqual(choices('LOG_LEVEL'));
    expect(schema.properties.dpop.properties.alg.enum).toEqual(['', ...choices('DPOP_ALG')]);
    expect(schema.definitions.dpopMode.else.else.enum).toEqual(choices('DPOP'));
    expect(schema.properties.dpop.properties.mode).toEqual({ $ref: '#/definitions/dpopMode' });
    // A route's: every algorithm, and the methods that authenticate with a secret.
    const route = schema.definitions.route.properties;
    expect(route.dpop).toEqual({ $ref: '#/definitions/dpopMode' });
    expect(route.dpopAlg.enum).toEqual(choices('DPOP_ALG'));
    expect(route.tokenAuthMethod.enum).toEqual(choices('TOKEN_AUTH_METHOD').filter((m) => m.startsWith('client_secret_')));
    expect(schema.properties.tracing.properties.sampler.enum).toEqual(['', ...choices('OTEL_TRACES_SAMPLER')]);
  });

  it('writes every refusal so that helm prints it as written (no quote for helm to escape)', () => {
    const messages = [...nodes(schema)].flatMap((n) => (typeof n.const === 'string' ? [n.const] : []));
    expect(messages.length).toBeGreaterThan(20);
    for (const message of messages) expect(message, message).not.toContain("'");
  });
});

describe("the chart's table of settings", () => {
  it("is the proxy's: the same names, kinds, ranges and choices", () => {
    const text = readFileSync(join(chart, 'templates', '_validate.tpl'), 'utf8');
    const body = /define "ticket-auth-proxy\.settingKinds" -}}\n([\s\S]*?)\{\{- end -}}/.exec(text)![1]!;
    const table = parseYaml(body) as Record<string, Record<string, unknown>>;
    const fromSource = Object.fromEntries(
      SETTINGS.map((s) => {
        const kind: Record<string, unknown> = { ...s.kind };
        if (Array.isArray(kind.values)) kind.values = [...(kind.values as string[])];
        return [s.env, kind];
      }),
    );
    expect(table).toEqual(fromSource);
  });
});
