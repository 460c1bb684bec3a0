/**
 * Routes in the chart (docs/routes.md), rendered by a real helm: the configuration file the chart
 * writes into its ConfigMap is read back by the proxy's own loader, with the environment the chart
 * gives the container and the files its volumes mount, so that the chart and the proxy agree on
 * every route; and what the proxy refuses of the routes, the chart refuses too, in helm template
 * and helm lint, in the proxy's words.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ROUTE_CHECKS, SETTINGS_CHECKS } from '../../src/app/settings-checks.js';
import { loadConfig } from '../../src/config/load.js';
import { readYamlFile } from '../../src/config/yaml-file.js';
import { ConfigError } from '../../src/core/errors.js';
import { helm, type HelmResult } from './helm-binary.js';
import { envOf, findKind, type Obj, parseObjects, validateObject } from './k8s-objects.js';
import { buildParentChart } from './parent-chart.js';

const root = join(import.meta.dirname, '..', '..');
const chart = join(root, 'helm', 'ticket-auth-proxy');
const work = mkdtempSync(join(tmpdir(), 'tap-helm-routes-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The top level every case starts from: a gateway and an existing Secret, every route's defaults. */
const TOP = { baseUrl: 'https://tickets.example.com', existingSecret: 'ticket-service-credentials' };
const SIDECAR = { mode: 'sidecar', sidecar: { preview: true } };
const SOCKET_DIR = '/var/run/ticket-auth-proxy';
/** Where the chart mounts each route's secret, and its configuration file. */
const ROUTE_SECRETS = '/var/run/secrets/ticket-auth-proxy-routes';
const CONFIG_FILE = '/etc/ticket-auth-proxy/config/proxy.yaml';

type Route = Record<string, unknown> & { name: string };

/** What a mounted Secret holds: a client secret, or under the DPoP key's directory a PEM key, made for this run. */
const DPOP_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const secretAt = (path: string, from: string): string =>
  path.startsWith('/etc/ticket-auth-proxy/dpop/') ? DPOP_KEY : `the content of ${from}`;

let files = 0;
async function helmWith(values: Record<string, unknown>, chartDir = chart): Promise<{ template: HelmResult; lint: HelmResult }> {
  const file = join(work, `values-${files++}.yaml`);
  writeFileSync(file, JSON.stringify(values));
  const [template, lint] = await Promise.all([
    helm(['template', 'rel', chartDir, '--namespace', 'tickets', '-f', file]),
    helm(['lint', '--strict', chartDir, '-f', file]),
  ]);
  return { template, lint };
}

async function render(values: Record<string, unknown>, chartDir = chart): Promise<Obj[]> {
  const { template } = await helmWith(values, chartDir);
  if (template.code !== 0) throw new Error(`helm template failed:\n${template.stderr}`);
  const objects = parseObjects(template.stdout);
  for (const o of objects) validateObject(o);
  return objects;
}

/** The pod the proxy runs in (the Deployment's, or the sidecar preview's), and its proxy container. */
function proxyIn(objects: Obj[]): { pod: Obj; container: Obj; annotations: Record<string, string> } {
  const deployment = findKind(objects, 'Deployment');
  const template = deployment ? deployment.spec.template : findKind(objects, 'Pod')!;
  const pod = template.spec;
  const container = [...(pod.initContainers ?? []), ...pod.containers].find((c: Obj) => c.name === 'ticket-auth-proxy');
  return { pod, container, annotations: template.metadata.annotations ?? {} };
}

/** What the kubelet puts at `path` in the proxy's container: a key of a mounted ConfigMap or Secret, and where it comes from. */
function fileInPod(objects: Obj[], path: string): { content: string; from: string } | undefined {
  const { pod, container } = proxyIn(objects);
  const mount = (container.volumeMounts as Obj[]).find((m) => path.startsWith(`${m.mountPath}/`));
  if (mount === undefined) return undefined;
  expect(mount.readOnly, `${path} is mounted read-only`).toBe(true);
  const volume = (pod.volumes as Obj[]).find((v) => v.name === mount.name)!;
  const source = volume.configMap ?? volume.secret;
  const item = (source.items as Obj[]).find((i) => i.path === path.slice(mount.mountPath.length + 1));
  if (item === undefined) return undefined;
  if (volume.configMap !== undefined) {
    const map = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === volume.configMap.name);
    return { content: map!.data[item.key], from: `ConfigMap ${volume.configMap.name}, key ${item.key}` };
  }
  const created = objects.find((o) => o.kind === 'Secret' && o.metadata.name === volume.secret.secretName);
  const from = `Secret ${volume.secret.secretName}, key ${item.key}`;
  return { content: created?.stringData?.[item.key] ?? secretAt(path, from), from };
}

/**
 * The proxy's configuration as it loads it in the rendered pod: the container's environment (a
 * value from a Secret stands in as its Secret and key), the file at CONFIG_FILE and every file a
 * setting names, each as the pod's volumes mount it. `read` lists what was read, from where.
 */
async function loadInPod(objects: Obj[]) {
  const { container } = proxyIn(objects);
  const env: Record<string, string> = {};
  for (const e of container.env as Obj[]) {
    const ref = e.valueFrom?.secretKeyRef;
    env[e.name] = e.value ?? (ref ? `${ref.name}/${ref.key}` : '192');
  }
  const read = new Map<string, string>();
  const readFile = (path: string): string => {
    const file = fileInPod(objects, path);
    if (file === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' });
    read.set(path, file.from);
    return file.content;
  };
  const path = env.CONFIG_FILE;
  const file = path === undefined ? undefined : await readYamlFile(path, readFile(path), {});
  return { loaded: loadConfig({ env, file, readFile }, SETTINGS_CHECKS, ROUTE_CHECKS), read, env, file };
}

/** The routes as the chart writes them into the proxy's file: its own keys become the route's secret file. */
function asTheChartWrites(routes: readonly Route[]): Record<string, unknown>[] {
  return routes.map(({ existingSecret, clientSecret, existingSecretKey: _key, ...route }) =>
    existingSecret || clientSecret ? { ...route, clientSecretFile: `${ROUTE_SECRETS}/${route.name}/client-secret` } : route,
  );
}

/** The environment the chart gives the proxy with `values`, rendered with one route it accepts. */
async function chartEnv(values: Record<string, unknown>): Promise<Record<string, string>> {
  const probe = { name: 'probe', mount: '/probe', baseUrl: 'https://probe.example.com', clientId: 'probe', existingSecret: 'probe' };
  const { env } = await loadInPod(await render({ ...values, routes: [probe] }));
  return env;
}

/** What the proxy says of `values.routes`, written as the chart writes them, in the environment the chart gives it. */
async function proxyProblems(values: Record<string, unknown>): Promise<string[]> {
  const env = await chartEnv({ ...values, routes: undefined });
  const text = JSON.stringify({ routes: asTheChartWrites(values.routes as Route[]) });
  const file = await readYamlFile(CONFIG_FILE, text, {});
  const readFile = (path: string): string => {
    if (path.startsWith('/var/run/secrets/') || path.startsWith('/etc/ticket-auth-proxy/dpop/')) return secretAt(path, path);
    throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' });
  };
  try {
    loadConfig({ env, file, readFile }, SETTINGS_CHECKS, ROUTE_CHECKS);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
}

const SCHEMA = "values don't meet the specifications of the schema";

/**
 * The proxy refuses the routes of `values` with each of `messages` (and nothing it does not say
 * beside them), and the chart refuses the values as it renders with every one of the proxy's
 * problems: in helm template, and in helm lint, which prints them quoted.
 */
async function expectRefusedLikeTheProxy(values: Record<string, unknown>, messages: string[]): Promise<void> {
  const problems = await proxyProblems(values);
  for (const message of messages) expect(problems.join('\n')).toContain(message);
  const { template, lint } = await helmWith(values);
  expect(template.code, 'helm template should have failed').not.toBe(0);
  expect(template.stderr).not.toContain(SCHEMA);
  for (const problem of problems) expect(template.stderr).toContain(problem);
  expect(lint.code, 'helm lint should have failed').not.toBe(0);
  for (const problem of problems) expect(lint.stdout).toContain(problem.replaceAll('"', '\\"'));
}

/** values.schema.json refuses `values` before anything renders, naming the route by its place, in helm template and helm lint. */
async function expectRefusedBySchema(values: Record<string, unknown>, message: string): Promise<void> {
  const { template, lint } = await helmWith(values);
  expect(template.code, 'helm template should have failed').not.toBe(0);
  expect(template.stderr).toContain(SCHEMA);
  expect(template.stderr).toContain(message);
  expect(lint.code, 'helm lint should have failed').not.toBe(0);
  expect(lint.stdout).toContain(message);
}

/** The two gateways of docs/routes.md, in the sidecar: one mounted, one on a socket of its own. */
const TWO_GATEWAYS: Route[] = [
  { name: 'eu', mount: '/eu', baseUrl: 'https://eu.tickets.example.com', clientId: 'eu-app', existingSecret: 'eu-credentials' },
  {
    name: 'us',
    listenSocket: `${SOCKET_DIR}/us.sock`,
    baseUrl: 'https://us.tickets.example.com',
    clientId: 'us-app',
    clientSecret: 'us-secret-from-values',
    paths: ['/api/v1', '/api/v2'],
  },
];

describe('the chart with routes', () => {
  it('writes them into a ConfigMap the proxy loads as CONFIG_FILE, each route with its own secret file from its own Secret', async () => {
    const objects = await render({ ...SIDECAR, ...TOP, tokenScope: 'tickets.read', routes: TWO_GATEWAYS });
    const { loaded, read, env, file } = await loadInPod(objects);
    expect(env.CONFIG_FILE).toBe(CONFIG_FILE);
    expect((file!.values as Obj).routes).toEqual(asTheChartWrites(TWO_GATEWAYS));
    expect(loaded.routes.map((r) => [r.name, r.way, r.paths, r.config.baseUrl, r.config.clientId, r.config.tokenScope])).toEqual([
      ['eu', { kind: 'mount', mount: '/eu' }, ['/api/v1'], 'https://eu.tickets.example.com', 'eu-app', 'tickets.read'],
      [
        'us',
        { kind: 'socket', path: `${SOCKET_DIR}/us.sock`, mode: '0660' },
        ['/api/v1', '/api/v2'],
        'https://us.tickets.example.com',
        'us-app',
        'tickets.read',
      ],
    ]);
    // Each route's secret is a file of its own, mounted from its own Secret; the created one holds the value.
    const secretOf = (name: string): string | undefined => read.get(loaded.routes.find((r) => r.name === name)!.config.clientSecretFile!);
    expect(secretOf('eu')).toBe('Secret eu-credentials, key client-secret');
    expect(secretOf('us')).toBe('Secret rel-ticket-auth-proxy-routes, key us');
    expect(findKind(objects, 'Secret')!.stringData).toEqual({ us: 'us-secret-from-values' });
    expect(read.get(CONFIG_FILE)).toBe('ConfigMap rel-ticket-auth-proxy-routes, key proxy.yaml');
    // The secret travels in the Secret alone: not in the ConfigMap, the environment or the pod.
    for (const o of objects.filter((o) => o.kind !== 'Secret')) expect(JSON.stringify(o)).not.toContain('us-secret-from-values');
  });

  it('keeps the pod as hardened as without routes: the same securityContext, every mount read-only but the sockets', async () => {
    const { pod, container } = proxyIn(await render({ ...SIDECAR, ...TOP, routes: TWO_GATEWAYS }));
    const { container: plain } = proxyIn(await render({ ...SIDECAR, ...TOP }));
    expect(container.securityContext).toEqual(plain.securityContext);
    expect(container.securityContext).toMatchObject({ runAsUser: 65532, readOnlyRootFilesystem: true, runAsNonRoot: true });
    for (const m of container.volumeMounts as Obj[]) expect(m.readOnly ?? m.name === 'ticket-auth-proxy-socket', m.name).toBe(true);
    const mounts = (container.volumeMounts as Obj[]).map((m) => m.mountPath);
    expect(new Set(mounts).size, 'each volume has a directory of its own').toBe(mounts.length);
    expect(pod.securityContext.fsGroup).toEqual(expect.any(Number));
  });

  it("puts a route's socket on the volume the app mounts, even with the main listener on loopback", async () => {
    const { pod, container } = proxyIn(await render({ ...SIDECAR, ...TOP, routes: TWO_GATEWAYS }));
    expect(envOf(container).LISTEN_PORT.value).toBe('8180');
    const socketMount = { name: 'ticket-auth-proxy-socket', mountPath: SOCKET_DIR };
    expect(container.volumeMounts).toContainEqual(socketMount);
    expect(pod.containers.find((c: Obj) => c.name === 'app').volumeMounts).toEqual([socketMount]);
    expect(pod.volumes.find((v: Obj) => v.name === socketMount.name).emptyDir).toEqual({ medium: 'Memory', sizeLimit: '1Mi' });
  });

  it('passes the routes through a parent chart: its pod gets the file, the secrets, the socket and the group', async () => {
    const parent = await buildParentChart(work);
    const objects = await render({ 'ticket-auth-proxy': { routes: TWO_GATEWAYS } }, parent);
    const { loaded } = await loadInPod(objects);
    expect(loaded.routes.map((r) => r.name)).toEqual(['eu', 'us']);
    const { pod, annotations } = proxyIn(objects);
    expect(pod.containers.find((c: Obj) => c.name === 'legacy-app').volumeMounts).toEqual([
      { name: 'ticket-auth-proxy-socket', mountPath: SOCKET_DIR },
    ]);
    expect(pod.securityContext.fsGroup).toEqual(expect.any(Number));
    expect(annotations['checksum/ticket-auth-proxy-routes']).toMatch(/^[0-9a-f]{64}$/);
    expect(objects.filter((o) => o.kind === 'ConfigMap' || o.kind === 'Secret').map((o) => `${o.kind} ${o.metadata.name}`)).toEqual(
      expect.arrayContaining(['ConfigMap rel-ticket-auth-proxy-routes', 'Secret rel-ticket-auth-proxy-routes']),
    );
  });

  it('rolls the pods when the routes change, and annotates nothing without routes', async () => {
    const checksum = async (routes: Route[] | undefined): Promise<string | undefined> =>
      proxyIn(await render({ ...TOP, routes })).annotations['checksum/ticket-auth-proxy-routes'];
    const eu = { name: 'eu', mount: '/eu', baseUrl: 'https://eu.tickets.example.com' };
    const before = await checksum([eu]);
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(await checksum([{ ...eu, paths: ['/api/v1', '/api/v2'] }])).not.toBe(before);
    expect(await checksum([eu])).toBe(before);
    expect(await checksum(undefined)).toBeUndefined();
  });

  it('puts a standalone route on a port of its own behind the Service, for the pods the NetworkPolicy lets in', async () => {
    const routes: Route[] = [
      { name: 'eu', mount: '/eu', baseUrl: 'https://eu.tickets.example.com' },
      { name: 'us', listenPort: 8280, baseUrl: 'https://us.tickets.example.com' },
      { name: 'tickets', paths: ['/api/v1', '/api/v2'] },
    ];
    const objects = await render({ ...TOP, networkPolicy: { allowedPodLabels: { app: 'legacy' } }, routes });
    const { loaded } = await loadInPod(objects);
    expect(loaded.routes.map((r) => [r.name, r.way])).toEqual([
      ['eu', { kind: 'mount', mount: '/eu' }],
      ['us', { kind: 'port', host: '::', port: 8280 }],
      ['tickets', { kind: 'main' }],
    ]);
    // Without a secret of their own, the routes take the top-level client: every route's default.
    expect(new Set(loaded.routes.map((r) => r.config.clientSecretFile))).toEqual(
      new Set(['/var/run/secrets/ticket-auth-proxy/client-secret']),
    );
    const { container } = proxyIn(objects);
    expect(container.ports).toContainEqual({ containerPort: 8280, protocol: 'TCP' });
    expect(findKind(objects, 'Service')!.spec.ports).toContainEqual({ name: 'us-route', port: 8280, targetPort: 8280, protocol: 'TCP' });
    expect(findKind(objects, 'NetworkPolicy')!.spec.ingress[0].ports).toEqual([
      { port: 'proxy', protocol: 'TCP' },
      { port: 8280, protocol: 'TCP' },
    ]);
  });

  it("passes a route's own settings on as written, numbers in digits, and the proxy takes them over the top level's", async () => {
    const tuned: Route = {
      name: 'tuned',
      mount: '/tuned',
      baseUrl: 'https://tuned.example.com',
      tokenUrl: 'https://login.example.com/oauth2/token',
      tokenAuthMethod: 'client_secret_basic',
      tokenScope: 'tuned.read',
      tokenParams: { audience: 'https://tuned', resource: ['a', 'b'] },
      dpop: 'on',
      dpopAlg: 'EdDSA',
      passthroughBasic: true,
      tokenWaitTimeoutMs: 0,
      tokenFetchTimeoutMs: 120000,
      upstreamTimeoutMs: 1000000,
      upstreamIdleTimeoutMs: 2000000,
      replayBodyLimitBytes: 1048576,
      tokenRefreshRatio: 0.5,
      tokenDefaultTtlS: 600,
    };
    const objects = await render({ ...TOP, routes: [tuned, { name: 'plain', mount: '/plain' }] });
    expect(findKind(objects, 'ConfigMap')!.data['proxy.yaml']).toContain('upstreamTimeoutMs: 1000000');
    const { loaded } = await loadInPod(objects);
    const [own, plain] = loaded.routes;
    expect(own!.config).toMatchObject({
      tokenUrl: 'https://login.example.com/oauth2/token',
      tokenAuthMethod: 'client_secret_basic',
      tokenScope: 'tuned.read',
      tokenParams: [
        ['audience', 'https://tuned'],
        ['resource', 'a'],
        ['resource', 'b'],
      ],
      dpop: 'on',
      dpopAlg: 'EdDSA',
      passthroughBasic: true,
      tokenWaitTimeoutMs: 0,
      tokenFetchTimeoutMs: 120000,
      upstreamTimeoutMs: 1000000,
      upstreamIdleTimeoutMs: 2000000,
      replayBodyLimitBytes: 1048576,
      tokenRefreshRatio: 0.5,
      tokenDefaultTtlS: 600,
    });
    expect(plain!.config).toMatchObject({ baseUrl: 'https://tickets.example.com', dpop: 'off', upstreamTimeoutMs: 30000 });
  });

  it("takes a route's issuer over the top-level token endpoint, as the proxy does", async () => {
    const objects = await render({
      ...TOP,
      tokenUrl: 'https://login.example.com/token',
      routes: [{ name: 'eu', mount: '/eu', issuerUrl: 'https://login.example.com' }],
    });
    const { loaded } = await loadInPod(objects);
    expect(loaded.routes[0]!.config).toMatchObject({ issuerUrl: 'https://login.example.com', tokenUrl: undefined });
  });

  it('renders without a top-level gateway or Secret when every route has its own', async () => {
    const objects = await render({ ...SIDECAR, routes: TWO_GATEWAYS });
    const vars = envOf(proxyIn(objects).container);
    expect([vars.BASE_URL, vars.CLIENT_ID, vars.CLIENT_SECRET_FILE]).toEqual([undefined, undefined, undefined]);
    const { loaded } = await loadInPod(objects);
    expect(loaded.routes.map((r) => [r.name, r.config.baseUrl])).toEqual([
      ['eu', 'https://eu.tickets.example.com'],
      ['us', 'https://us.tickets.example.com'],
    ]);
  });

  it('renders examples/helm/routes-values.yaml into a pod the proxy loads, as docs/deployment.md shows it', async () => {
    const values = parseYaml(readFileSync(join(root, 'examples', 'helm', 'routes-values.yaml'), 'utf8')) as Record<string, unknown>;
    const { loaded, read } = await loadInPod(await render({ ...values, sidecar: { preview: true } }));
    expect(loaded.routes.map((r) => [r.name, r.way.kind, read.get(r.config.clientSecretFile!)])).toEqual([
      ['eu', 'mount', 'Secret eu-credentials, key client-secret'],
      ['us', 'socket', 'Secret us-credentials, key client-secret'],
    ]);
  });
});

describe('the routes the proxy refuses', () => {
  const eu = { name: 'eu', mount: '/eu', baseUrl: 'https://eu.tickets.example.com' };
  it.each<[string, Record<string, unknown>, string[]]>([
    [
      'a name given twice',
      { ...TOP, routes: [eu, { ...eu, mount: '/eu2' }] },
      ['routes: the route name "eu" is given 2 times: each route has a name of its own'],
    ],
    [
      'two routes without a way in',
      { ...TOP, routes: [{ name: 'a' }, { name: 'b' }] },
      [
        `routes: "a", "b" have no way in of their own: at most one route serves the main listener's paths; give the others a mount, a listenPort or a listenSocket`,
      ],
    ],
    [
      'a route with two ways in, one with a socket mode and no socket',
      {
        ...TOP,
        routes: [
          { ...eu, listenPort: 9000 },
          { name: 'us', listenPort: 9001, listenSocketMode: '0600' },
        ],
      },
      [
        'routes: "eu" has mount and listenPort: a route is reached one way, a mount or a listener of its own',
        `routes: "us" has listenSocketMode without listenSocket: the mode is its socket file's`,
      ],
    ],
    [
      'a mount inside another, and two routes on one mount',
      { ...TOP, routes: [eu, { name: 'eu-x', mount: '/eu/x' }, { name: 'eu-again', mount: '/eu' }] },
      [
        `routes: "eu-x" mounts /eu/x, inside "eu"'s mount /eu: a mount may not lie under another`,
        'routes: "eu" and "eu-again" both mount /eu: give each route a mount of its own',
      ],
    ],
    [
      'a route on the admin port, one on the main port, two on one port',
      {
        ...TOP,
        routes: [
          { name: 'admin', listenPort: 8181 },
          { name: 'main', listenPort: 8180 },
          { name: 'p1', listenPort: 9000 },
          { name: 'p2', listenPort: 9000 },
        ],
      },
      [
        'routes: "admin" listens on port 8181, as ADMIN_PORT (the admin listener) does: give each route a port of its own',
        'routes: "main" listens on port 8180, as LISTEN_PORT (the main proxy listener) does: give each route a port of its own',
        'routes: "p2" listens on port 9000, as route "p1" does: give each route a port of its own',
      ],
    ],
    [
      "a route on the main listener's socket, two on one socket",
      {
        ...SIDECAR,
        ...TOP,
        listenSocket: `${SOCKET_DIR}/proxy.sock`,
        routes: [
          { name: 's0', listenSocket: `${SOCKET_DIR}/proxy.sock` },
          { name: 's1', listenSocket: `${SOCKET_DIR}/s.sock` },
          { name: 's2', listenSocket: `${SOCKET_DIR}/s.sock` },
        ],
      },
      [
        `routes: "s0" listens on the socket ${SOCKET_DIR}/proxy.sock, as LISTEN_SOCKET (the main proxy listener) does: give each route a socket of its own`,
        `routes: "s2" listens on the socket ${SOCKET_DIR}/s.sock, as route "s1" does: give each route a socket of its own`,
      ],
    ],
    [
      'a route without a gateway while the top level has none',
      { ...TOP, baseUrl: '', routes: [eu, { name: 'lost', mount: '/lost' }] },
      ['routes: "lost" has no baseUrl, and none is set at the top level (BASE_URL): name its gateway'],
    ],
    [
      "a route's DPoP algorithm while its DPoP is off",
      { ...TOP, routes: [{ ...eu, dpopAlg: 'ES256' }] },
      [`routes[eu].dpopAlg in ${CONFIG_FILE} (DPOP_ALG) is set but DPOP is off`],
    ],
    [
      'the top-level DPoP key in a route that turns DPoP off',
      { ...TOP, dpop: { mode: 'on', existingSecret: 'dpop-key' }, routes: [{ ...eu, dpop: 'off' }] },
      ['DPOP_KEY_FILE is set but DPOP is off'],
    ],
  ])('refuses %s as it renders, in the proxy words, in helm template and helm lint', async (_name, values, messages) => {
    await expectRefusedLikeTheProxy(values, messages);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a name outside the form', { ...TOP, routes: [{ name: 'EU_1', mount: '/eu' }] }, "at '/routes/0/name': value must be 'a route name"],
    [
      'a mount that is no plain path',
      { ...TOP, routes: [{ name: 'eu', mount: '/eu/' }] },
      "at '/routes/0/mount': value must be 'a path prefix",
    ],
    [
      'paths that list no path',
      { ...TOP, routes: [{ name: 'eu', paths: [] }] },
      "at '/routes/0/paths': value must be 'the gateway path prefixes",
    ],
    [
      'a path that is no plain path',
      { ...TOP, routes: [{ name: 'eu', paths: ['/api/v1', 'api/v2'] }] },
      "at '/routes/0/paths/1': value must be",
    ],
    [
      'more than 32 routes',
      { ...TOP, routes: Array.from({ length: 33 }, (_, i) => ({ name: `r${i}`, mount: `/r${i}` })) },
      "at '/routes': value must be 'at most 32 routes'",
    ],
    [
      'a gateway ending in /api/v1 without a token endpoint',
      { ...TOP, routes: [{ ...eu, baseUrl: 'https://eu.tickets.example.com/api/v1' }] },
      "at '/routes/0/baseUrl': value must be 'the gateway base URL without /api/v1",
    ],
    [
      'an http: gateway off loopback',
      { ...TOP, routes: [{ ...eu, baseUrl: 'http://eu.tickets.example.com' }] },
      "at '/routes/0/baseUrl': value must be 'https, or http: for a loopback host only",
    ],
    [
      'a token parameter the proxy sets itself',
      { ...TOP, routes: [{ ...eu, tokenParams: { client_id: 'x' } }] },
      "value must be 'a form field the proxy does not set itself",
    ],
    ['a fetch timeout out of range', { ...TOP, routes: [{ ...eu, tokenFetchTimeoutMs: 0 }] }, "at '/routes/0/tokenFetchTimeoutMs'"],
    [
      'a route without a secret while the top level has none',
      {
        baseUrl: TOP.baseUrl,
        routes: [
          { ...eu, clientId: 'eu-app', existingSecret: 'eu-credentials' },
          { name: 'bare', mount: '/bare' },
        ],
      },
      "at '/routes/1/name': value must be 'a route with a client secret of its own",
    ],
  ])('refuses %s in its schema, naming the route by its place, in helm template and helm lint', async (_name, values, message) => {
    expect(await proxyProblems(values), 'the proxy itself refuses these routes').not.toEqual([]);
    await expectRefusedBySchema(values, message);
  });

  // Each mount against the proxy's own reading and the schema's pattern: the two must agree.
  const mounts = [
    '/eu',
    '/eu/v1',
    '/e.u',
    '/~x',
    '/..x',
    '/eu-1_x',
    '/eu/',
    'eu',
    '/',
    '/eu//x',
    '/eu/./x',
    '/eu/..',
    '/e%20u',
    '/e u',
    '/ü',
  ];
  it.each(mounts)('refuses the mount %j exactly when the proxy refuses it', async (mount) => {
    const values = { ...TOP, routes: [{ name: 'eu', mount }] };
    const refusedByProxy = (await proxyProblems(values)).length > 0;
    const { lint } = await helmWith(values);
    expect(lint.code !== 0, lint.stdout).toBe(refusedByProxy);
  });
});

describe("the chart's own refusals of routes", () => {
  it.each<[string, Record<string, unknown>, string]>([
    [
      'a socket outside the directory of the others, the one volume the app mounts',
      { ...SIDECAR, ...TOP, listenSocket: `${SOCKET_DIR}/proxy.sock`, routes: [{ name: 'us', listenSocket: '/var/run/other/us.sock' }] },
      `routes: "us"'s listenSocket /var/run/other/us.sock is not in ${SOCKET_DIR}, the directory of listenSocket`,
    ],
    [
      "a standalone route on the Service's port",
      { ...TOP, service: { port: 9000 }, routes: [{ name: 'us', listenPort: 9000 }] },
      `routes: "us" listens on port 9000, the Service's port of the main listener (service.port)`,
    ],
  ])('refuses %s as it renders, in helm template and helm lint', async (_name, values, message) => {
    const { template, lint } = await helmWith(values);
    expect(template.code).not.toBe(0);
    expect(template.stderr).toContain(message);
    expect(lint.code).not.toBe(0);
    expect(lint.stdout).toContain(message.replaceAll('"', '\\"'));
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a socket in standalone mode',
      { ...TOP, routes: [{ name: 'us', listenSocket: `${SOCKET_DIR}/us.sock` }] },
      'left out in mode: standalone',
    ],
    [
      'a secret both existing and from values',
      { ...TOP, routes: [{ ...TWO_GATEWAYS[0]!, clientSecret: 'x' }] },
      "at '/routes/0/clientSecret': value must be 'left out beside existingSecret",
    ],
    [
      'a secret of its own without a client',
      { ...TOP, routes: [{ name: 'eu', existingSecret: 'eu-credentials' }] },
      "missing property 'clientId'",
    ],
    [
      'a file the chart mounts for every route',
      { ...TOP, routes: [{ name: 'eu', caFile: '/ca.pem' }] },
      "at '/routes/0/caFile': value must be 'left out",
    ],
    [
      'a secret file named by path',
      { ...TOP, routes: [{ name: 'eu', clientSecretFile: '/s' }] },
      "at '/routes/0/clientSecretFile': value must be 'left out",
    ],
  ])('refuses %s in its schema', async (_name, values, message) => {
    await expectRefusedBySchema(values, message);
  });
});
