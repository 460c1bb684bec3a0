/**
 * The chart's token store values, rendered by a real helm: the settings, the password and key
 * material from an existing Secret mounted as files, the NetworkPolicy's egress to the store, and
 * the values the proxy would refuse at start, refused at render with the proxy's own message.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { loadSettings } from '../helpers/load-settings.js';
import { helm } from './helm-binary.js';
import { findKind, parseObjects, validateObject, type Obj } from './k8s-objects.js';

const chart = join(import.meta.dirname, '..', '..', 'helm', 'ticket-auth-proxy');
const work = mkdtempSync(join(tmpdir(), 'tap-helm-store-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const URL = 'rediss://ticket-proxy@redis.tickets.svc:6380';
const PEERS = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'redis' } } }];

let files = 0;
/** helm template with these values (a file, so every value keeps its type). */
async function render(
  values: Record<string, unknown>,
  command: 'template' | 'lint' = 'template',
): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = join(work, `values-${files++}.yaml`);
  writeFileSync(file, JSON.stringify({ existingSecret: 'creds', baseUrl: 'https://tickets.example.com', ...values }));
  return helm(command === 'template' ? ['template', 'rel', chart, '-f', file] : ['lint', chart, '-f', file]);
}

async function objects(values: Record<string, unknown>): Promise<Obj[]> {
  const result = await render(values);
  if (result.code !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  const parsed = parseObjects(result.stdout);
  for (const o of parsed) validateObject(o);
  return parsed;
}

function container(objs: Obj[]): Obj {
  const pod = findKind(objs, 'Deployment')!.spec.template.spec;
  return pod.containers.find((c: Obj) => c.name === 'ticket-auth-proxy');
}

const envOf = (c: Obj): Record<string, string> =>
  Object.fromEntries(c.env.filter((e: Obj) => 'value' in e).map((e: Obj) => [e.name, e.value]));

describe('the chart with a token store', () => {
  it('sets nothing of the store without tokenStore.url', async () => {
    const objs = await objects({});
    expect(Object.keys(envOf(container(objs))).filter((n) => n.startsWith('TOKEN_STORE'))).toEqual([]);
    expect(findKind(objs, 'NetworkPolicy')!.spec.policyTypes).toEqual(['Ingress']);
  });

  it('gives the proxy the URL, the mode and the password and key material as files of an existing Secret', async () => {
    const objs = await objects({
      tokenStore: {
        url: URL,
        mode: 'standalone',
        existingSecret: 'store-creds',
        keyFileKey: 'store-key',
        prefix: 'team-a:',
        timeoutMs: 400,
      },
    });
    const c = container(objs);
    expect(envOf(c)).toMatchObject({
      TOKEN_STORE_URL: URL,
      TOKEN_STORE_MODE: 'standalone',
      TOKEN_STORE_PASSWORD_FILE: '/etc/ticket-auth-proxy/token-store/password',
      TOKEN_STORE_KEY_FILE: '/etc/ticket-auth-proxy/token-store/store-key',
      TOKEN_STORE_PREFIX: 'team-a:',
      TOKEN_STORE_TIMEOUT_MS: '400',
    });
    expect(c.volumeMounts).toContainEqual({
      name: 'ticket-auth-proxy-token-store',
      mountPath: '/etc/ticket-auth-proxy/token-store',
      readOnly: true,
    });
    const volume = findKind(objs, 'Deployment')!.spec.template.spec.volumes.find((v: Obj) => v.name === 'ticket-auth-proxy-token-store');
    // The whole directory (no subPath): a rotated Secret reaches the proxy. Only the two keys.
    expect(volume.secret).toEqual({
      secretName: 'store-creds',
      defaultMode: 444,
      items: [
        { key: 'password', path: 'password' },
        { key: 'store-key', path: 'store-key' },
      ],
    });
  });

  it('writes a large store timeout in digits, as the proxy reads it, not as a float', async () => {
    const objs = await objects({ tokenStore: { url: URL, existingSecret: 's', timeoutMs: 99999999 } });
    expect(envOf(container(objs)).TOKEN_STORE_TIMEOUT_MS).toBe('99999999');
  });

  it('leaves egress alone by default, and makes it an allow-list with DNS, the rules given and the store on the port of each URL', async () => {
    const defaultPolicy = findKind(await objects({ tokenStore: { url: URL, existingSecret: 's' } }), 'NetworkPolicy')!;
    expect(defaultPolicy.spec.policyTypes).toEqual(['Ingress']);
    expect(defaultPolicy.spec.egress).toBeUndefined();

    const gateway = { to: [{ ipBlock: { cidr: '203.0.113.0/24' } }], ports: [{ port: 443, protocol: 'TCP' }] };
    const cluster = 'redis://ticket-proxy@10.0.0.1:7000,redis://ticket-proxy@10.0.0.2:7001,redis://ticket-proxy@10.0.0.3';
    const policy = findKind(
      await objects({
        networkPolicy: { egress: [gateway] },
        tokenStore: { url: cluster, mode: 'cluster', existingSecret: 's', networkPolicyTo: PEERS },
      }),
      'NetworkPolicy',
    )!;
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.egress).toEqual([
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
      gateway,
      { to: PEERS, ports: [7000, 7001, 6379].map((port) => ({ port, protocol: 'TCP' })) },
    ]);
  });

  it.each([
    [
      'a store the NetworkPolicy would keep the pods from',
      { networkPolicy: { egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }] }, tokenStore: { url: URL, existingSecret: 's' } },
      'tokenStore.networkPolicyTo is required',
    ],
    ['a Secret without a store', { tokenStore: { existingSecret: 's' } }, 'tokenStore.existingSecret is set without tokenStore.url'],
    ['a password in the URL', { tokenStore: { url: 'redis://user:hunter2@redis:6379' } }, 'tokenStore.url holds a password'],
    ['a password with an unencoded "/"', { tokenStore: { url: 'redis://u:hunter2/et@redis:6379' } }, 'tokenStore.url holds a password'],
    [
      'a password with a "," in a list of seed nodes',
      { tokenStore: { url: 'redis://u:hunter2,x@10.0.0.1:6379,redis://u:hunter2,x@10.0.0.2:6379', mode: 'cluster' } },
      'tokenStore.url holds a password',
    ],
    ['an unknown mode', { tokenStore: { url: URL, mode: 'sentinel' } }, '/tokenStore/mode'],
  ])('refuses %s, saying what to set, in helm template and helm lint', async (_what, values, message) => {
    const [result, lint] = await Promise.all([render(values), render(values, 'lint')]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(message);
    expect(lint.code, 'helm lint should have failed').not.toBe(0);
    expect(lint.stdout).toContain(message);
    expect(lint.stdout + lint.stderr).toContain('1 chart(s) failed');
    expect(result.stderr + lint.stdout + lint.stderr).not.toContain('hunter2');
  });
});

/** The environment the chart gives the proxy, as far as the store check reads it. */
const CHART_ENV: Record<string, string> = {
  BASE_URL: 'https://tickets.example.com',
  CLIENT_ID: 'client',
  CLIENT_SECRET_FILE: '/var/run/secrets/ticket-auth-proxy/client-secret',
};

/** What the proxy says at start about this environment. */
function proxyProblems(env: Record<string, string>): string[] {
  try {
    loadSettings({ env: { ...CHART_ENV, ...env }, readFile: () => 'a-file', readBytes: () => Buffer.alloc(32, 1) });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
}

describe('token store values the proxy refuses at start', () => {
  it.each([
    ['another scheme', { url: 'http://redis:6379' }, { TOKEN_STORE_URL: 'http://redis:6379', TOKEN_STORE_MODE: 'standalone' }],
    ['no URL at all', { url: 'redis-server:6379' }, { TOKEN_STORE_URL: 'redis-server:6379', TOKEN_STORE_MODE: 'standalone' }],
    [
      'a list of seed nodes without cluster mode',
      { url: 'redis://a:6379,redis://b:6379' },
      { TOKEN_STORE_URL: 'redis://a:6379,redis://b:6379', TOKEN_STORE_MODE: 'standalone' },
    ],
    [
      'a database in cluster mode',
      { url: 'redis://a:6379/2', mode: 'cluster' },
      { TOKEN_STORE_URL: 'redis://a:6379/2', TOKEN_STORE_MODE: 'cluster' },
    ],
    ['a query', { url: 'redis://a:6379?tls=true' }, { TOKEN_STORE_URL: 'redis://a:6379?tls=true', TOKEN_STORE_MODE: 'standalone' }],
    ['a path', { url: 'redis://a:6379/tokens' }, { TOKEN_STORE_URL: 'redis://a:6379/tokens', TOKEN_STORE_MODE: 'standalone' }],
    [
      'a user without a password',
      { url: 'redis://proxy@a:6379' },
      { TOKEN_STORE_URL: 'redis://proxy@a:6379', TOKEN_STORE_MODE: 'standalone' },
    ],
    [
      'a prefix an ACL pattern would misread',
      { url: 'redis://a:6379', prefix: 'team a*' },
      { TOKEN_STORE_URL: 'redis://a:6379', TOKEN_STORE_MODE: 'standalone', TOKEN_STORE_PREFIX: 'team a*' },
    ],
  ])('refuses %s with the proxy’s message', async (_what, tokenStore, env) => {
    const problems = proxyProblems({ ...env, TOKEN_STORE_TIMEOUT_MS: '250' });
    expect(problems.length, 'the proxy itself refuses this environment').toBeGreaterThan(0);
    const result = await render({ tokenStore });
    expect(result.code).not.toBe(0);
    for (const problem of problems) expect(result.stderr).toContain(problem);
    expect(result.stderr).toContain('tokenStore.');
  });

  it('refuses TOKEN_STORE_* without TOKEN_STORE_URL, as extraEnv would give them', async () => {
    const problems = proxyProblems({ TOKEN_STORE_PREFIX: 'team-a:' });
    expect(problems).toHaveLength(1);
    const result = await render({ extraEnv: [{ name: 'TOKEN_STORE_PREFIX', value: 'team-a:' }] });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(problems[0]);
  });

  it.each([
    ['standalone', 'redis://cache:6379'],
    ['standalone', 'redis://u:s3cr/et@redis:6379'],
    ['standalone', 'redis://u:123/et@cache:6379'],
    ['standalone', 'rediss://u:a?b#c@cache'],
    ['standalone', 'redis://u:50%off@cache'],
    ['standalone', 'redis://u:%E2%82%AC@cache'],
    ['standalone', 'redis://u:%C0%AF@cache'],
    ['standalone', 'redis://u:%ED%A0%80@cache'],
    ['standalone', 'redis://u:p@ss@cache:6379'],
    ['standalone', 'redis://u:a,b@cache:6379'],
    ['standalone', 'redis://u:pw@a:6379,b:6379'],
    ['standalone', 'redis://a:6379,redis://b:6379'],
    ['standalone', 'redis://u:pw@cache:port'],
    ['standalone', 'redis://cache:70000'],
    ['standalone', 'redis:cache:6379'],
    ['standalone', 'redis:///0'],
    ['standalone', 'redis://cache:6379?'],
    ['standalone', 'redis://cache:6379/0/'],
    ['standalone', 'redis://[::1]:6379/2'],
    ['standalone', 'redis://ca che:6379'],
    ['standalone', 'http://u:pw@cache'],
    ['standalone', 'u:pw@cache:6379'],
    ['standalone', '127.0.0.1:6379'],
    ['standalone', 'redis://proxy@cache'],
    ['cluster', 'redis://app:RPW1a,b@10.0.0.1:6379,redis://app:RPW1a,b@10.0.0.2:6379'],
    ['cluster', 'redis://a:6379, redis://b:7000'],
    ['cluster', 'redis://a:6379,b:6379'],
    ['cluster', 'redis://a:6379/1'],
    ['cluster', 'redis://u:pw@a:6379,redis://v:pw@b:6379'],
    ['cluster', 'rediss://u:pw@a,redis://u:pw@b'],
  ])(
    'refuses the %s TOKEN_STORE_URL %j from extraEnv exactly when the proxy does, with its message, never the password',
    async (mode, url) => {
      const env = { TOKEN_STORE_URL: url, TOKEN_STORE_MODE: mode };
      const problems = proxyProblems(env);
      const extraEnv = Object.entries(env).map(([name, value]) => ({ name, value }));
      const [result, lint] = await Promise.all([render({ extraEnv }), render({ extraEnv }, 'lint')]);
      expect(result.code !== 0, result.stderr).toBe(problems.length > 0);
      expect(lint.code !== 0, lint.stdout).toBe(problems.length > 0);
      for (const problem of problems) {
        expect(result.stderr).toContain(`extraEnv: ${problem}`);
        expect(lint.stdout).toContain(problem.replaceAll('"', '\\"'));
      }
      for (const secret of ['s3cr', '123/et', 'a?b', '50%', '%E2', '%C0', '%ED', 'p@ss', 'a,b', 'RPW1a', ':pw']) {
        expect(result.stderr + lint.stdout).not.toContain(secret);
      }
    },
  );

  it('accepts what the proxy accepts: a cluster of seed nodes with a user and its password file', async () => {
    const url = 'rediss://proxy@10.0.0.1:6379,rediss://proxy@10.0.0.2:6379';
    expect(proxyProblems({ TOKEN_STORE_URL: url, TOKEN_STORE_MODE: 'cluster', TOKEN_STORE_PASSWORD_FILE: '/p' })).toEqual([]);
    expect((await render({ tokenStore: { url, mode: 'cluster', existingSecret: 's' } })).code).toBe(0);
  });
});
