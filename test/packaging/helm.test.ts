/**
 * The Helm chart, rendered by a real helm (test/packaging/helm-binary.ts) and every object
 * validated against the Kubernetes API schemas of `kubernetes-models`, then read the way the
 * kubelet would: security context, probes, ports, environment, mounts, shutdown timing.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config/config.js';
import { helm } from './helm-binary.js';
import { envOf as env, findKind as find, KNOWN_ENV, type Obj, parseObjects as parse, validateObject } from './k8s-objects.js';
import { buildParentChart } from './parent-chart.js';

const root = join(import.meta.dirname, '..', '..');
const chart = join(root, 'helm', 'ticket-auth-proxy');
const ciValues = readdirSync(join(chart, 'ci'))
  .filter((f) => f.endsWith('-values.yaml'))
  .sort();

async function render(args: string[], chartDir = chart): Promise<Obj[]> {
  const result = await helm(['template', 'rel', chartDir, '--namespace', 'tickets', ...args]);
  if (result.code !== 0) throw new Error(`helm template ${args.join(' ')} failed:\n${result.stderr}`);
  return parse(result.stdout);
}

/** What helm template says refusing these values; helm lint must refuse them too. */
async function renderError(args: string[]): Promise<string> {
  const [result, lint] = await Promise.all([helm(['template', 'rel', chart, ...args]), helm(['lint', chart, ...args])]);
  expect(result.code, 'helm template should have failed').not.toBe(0);
  expect(lint.code, 'helm lint should have failed').not.toBe(0);
  expect(lint.stdout + lint.stderr).toContain('1 chart(s) failed');
  return result.stderr;
}

/** Where the proxy runs: its own pods, or beside an app. */
type Form = 'standalone' | 'sidecar';

/**
 * The readiness a form runs with: a standalone proxy is ready while it holds a token; a sidecar
 * (READINESS=started) once it has held one, its app started then through the startup probe.
 */
function expectReadiness(container: Obj, form: Form): void {
  expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'admin' });
  expect(container.livenessProbe.httpGet).toEqual({ path: '/livez', port: 'admin' });
  if (form === 'standalone') {
    expect(env(container).READINESS).toBeUndefined();
    expect(container.startupProbe.httpGet).toEqual({ path: '/livez', port: 'admin' });
  } else {
    expect(env(container).READINESS.value).toBe('started');
    expect(container.startupProbe.httpGet).toEqual({ path: '/readyz', port: 'admin' });
    // An identity provider down as the pod starts gets minutes, not seconds, before a restart.
    expect(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold).toBeGreaterThanOrEqual(300);
  }
}

/** What every proxy container must be, from the chart or the plain manifest. */
function expectHardenedProxy(container: Obj, volumes: Obj[], form: Form): void {
  expect(container.securityContext).toEqual({
    runAsNonRoot: true,
    runAsUser: 65532,
    runAsGroup: 65532,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  });
  const ports = Object.fromEntries(container.ports.map((p: Obj) => [p.name, p.containerPort]));
  expect(ports.admin).toBe(8181);
  // The kubelet probes the pod's address, an IPv6 one on an IPv6-only cluster: the admin listener
  // takes both families (and falls back to IPv4 alone where the node has no IPv6).
  expect(env(container).ADMIN_HOST.value).toBe('::');
  expectReadiness(container, form);

  const vars = env(container);
  for (const name of Object.keys(vars)) expect(KNOWN_ENV, `${name} is not a setting the proxy reads`).toContain(name);
  expect(vars.CLIENT_SECRET, 'the secret must not travel in the environment').toBeUndefined();
  expect(vars.CLIENT_ID?.valueFrom?.secretKeyRef?.key).toBe('client-id');
  // The secret file sits in the mounted Secret volume, whose Secret is the one CLIENT_ID comes from.
  const mount = container.volumeMounts.find((m: Obj) => vars.CLIENT_SECRET_FILE.value.startsWith(`${m.mountPath}/`));
  expect(mount?.readOnly).toBe(true);
  const volume: Obj | undefined = volumes.find((v) => v.name === mount.name);
  expect(volume?.secret?.secretName).toBe(vars.CLIENT_ID.valueFrom.secretKeyRef.name);
  const file = vars.CLIENT_SECRET_FILE.value.slice(mount.mountPath.length + 1);
  expect(volume!.secret.items).toContainEqual({ key: 'client-secret', path: file });
}

/** What the chart's proxy container is, whatever the mode. */
function expectSecureProxy(container: Obj, volumes: Obj[], form: Form): void {
  expectHardenedProxy(container, volumes, form);
  const ports = Object.fromEntries(container.ports.map((p: Obj) => [p.name, p.containerPort]));
  expect(ports).toEqual({ proxy: 8180, admin: 8181 });
  expect(env(container).LISTEN_PORT.value).toBe('8180');
  expect(env(container).ADMIN_PORT.value).toBe('8181');
  expect(env(container).NODE_OPTIONS?.value).toBe('--max-semi-space-size=16 --expose-gc');
}

/** preStop sleep + SHUTDOWN_DELAY_S + SHUTDOWN_TIMEOUT_S, each as set or the proxy's default. */
function shutdownSeconds(container: Obj): number {
  const vars = env(container);
  const seconds = (name: string): number => Number(vars[name]?.value ?? SETTINGS.find((s) => s.env === name)!.default);
  return (container.lifecycle?.preStop?.sleep?.seconds ?? 0) + seconds('SHUTDOWN_DELAY_S') + seconds('SHUTDOWN_TIMEOUT_S');
}

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'tap-helm-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the chart', () => {
  it.each(ciValues)('passes helm lint --strict with ci/%s', async (file) => {
    const result = await helm(['lint', '--strict', chart, '-f', join(chart, 'ci', file)]);
    expect(result.stderr + result.stdout).toContain('0 chart(s) failed');
    expect(result.code).toBe(0);
  });

  it('has ci values for standalone, sidecar, created-secret and all-options renders', () => {
    expect(ciValues).toEqual(
      expect.arrayContaining([
        'standalone-values.yaml',
        'sidecar-values.yaml',
        'created-secret-values.yaml',
        'standalone-all-options-values.yaml',
        'secretless-values.yaml',
        'dpop-values.yaml',
        'sidecar-socket-values.yaml',
      ]),
    );
  });

  it('switches every optional object on in some ci/ values file, so that `ct lint` of ci/ exercises them all', async () => {
    const rendered = new Set<string>();
    for (const file of ciValues)
      for (const o of await render(['-f', join(chart, 'ci', file)]))
        rendered.add(o.kind === 'ConfigMap' && o.data?.['ticket-auth-proxy.json'] ? 'dashboard ConfigMap' : o.kind);
    for (const kind of [
      'ServiceMonitor',
      'PrometheusRule',
      'dashboard ConfigMap',
      'PodDisruptionBudget',
      'NetworkPolicy',
      'HorizontalPodAutoscaler',
      'ServiceAccount',
      'Secret',
    ]) {
      expect(rendered, kind).toContain(kind);
    }
  });

  it.each(ciValues)('renders %s into objects the Kubernetes API schemas accept', async (file) => {
    const objects = await render(['-f', join(chart, 'ci', file)]);
    expect(objects.length).toBeGreaterThan(0);
    for (const o of objects) validateObject(o);
  });
});

describe('standalone mode', () => {
  it('runs a secure proxy listening on all interfaces behind a Service, with probes on the admin port', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'standalone-values.yaml')]);
    const deployment = find(objects, 'Deployment')!;
    const pod = deployment.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    const [container] = pod.containers;
    expectSecureProxy(container, pod.volumes, 'standalone');
    // The Service sends the pod's IPv4 or IPv6 address: the listener takes both.
    expect(env(container).LISTEN_HOST.value).toBe('::');
    expect(env(container).BASE_URL.value).toBe('https://tickets.example.com');
    expect(env(container).CLIENT_ID.valueFrom.secretKeyRef.name).toBe('ticket-service-credentials');
    const service = find(objects, 'Service')!;
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
    expect(service.spec.ports).toContainEqual(expect.objectContaining({ name: 'proxy', port: 8180, targetPort: 'proxy' }));
    expect(find(objects, 'Secret')).toBeUndefined();
  });

  it('keeps serving through a preStop sleep and drains within the grace period', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'standalone-values.yaml')]);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    const [container] = pod.containers;
    expect(container.lifecycle.preStop.sleep.seconds).toBe(5);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(shutdownSeconds(container));
  });

  it('moves the keep-serving time to SHUTDOWN_DELAY_S on clusters without the preStop sleep (1.29)', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'standalone-values.yaml'), '--kube-version', '1.29.4']);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    const [container] = pod.containers;
    expect(container.lifecycle).toBeUndefined();
    expect(env(container).SHUTDOWN_DELAY_S.value).toBe('5');
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(shutdownSeconds(container));
  });

  it('lets only the selected pods reach the proxy port, by default', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'standalone-values.yaml')]);
    const policy = find(objects, 'NetworkPolicy')!;
    expect(policy.spec.podSelector.matchLabels).toEqual(find(objects, 'Deployment')!.spec.selector.matchLabels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toEqual([
      { from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'legacy-app' } } }], ports: [{ port: 'proxy', protocol: 'TCP' }] },
    ]);
    const none = await render(['-f', join(chart, 'ci', 'no-networkpolicy-values.yaml')]);
    expect(find(none, 'NetworkPolicy')).toBeUndefined();
  });

  it('admits no pod at all while no allowed pods are named', async () => {
    const objects = await render(['--set', 'baseUrl=https://tickets.example.com', '--set', 'existingSecret=creds']);
    const policy = find(objects, 'NetworkPolicy')!;
    validateObject(policy);
    expect(policy.spec.podSelector.matchLabels).toEqual(find(objects, 'Deployment')!.spec.selector.matchLabels);
    // An Ingress policy without rules: every connection to the selected pods is refused.
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress ?? []).toEqual([]);
  });

  it('passes client_secret_jwt on with the secret mounted as a file, as the other secret methods', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'standalone-values.yaml'), '--set', 'tokenAuthMethod=client_secret_jwt']);
    const vars = env(find(objects, 'Deployment')!.spec.template.spec.containers[0]);
    expect(vars.TOKEN_AUTH_METHOD).toMatchObject({ value: 'client_secret_jwt' });
    expect(vars.CLIENT_SECRET_FILE).toBeDefined();
  });

  it('renders the HPA, PodDisruptionBudget and ServiceMonitor when asked, aimed at the Deployment', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'standalone-all-options-values.yaml')]);
    const deployment = find(objects, 'Deployment')!;
    expect(deployment.spec.replicas, 'the HPA owns the replica count').toBeUndefined();
    expect(find(objects, 'HorizontalPodAutoscaler')!.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: deployment.metadata.name,
    });
    expect(find(objects, 'PodDisruptionBudget')!.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    const monitor = find(objects, 'ServiceMonitor')!;
    expect(monitor.metadata.labels.release).toBe('prometheus');
    const container = deployment.spec.template.spec.containers[0];
    expect(container.image).toBe(
      'registry.example.invalid/ticket-auth-proxy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    );
    expect(env(container)).toMatchObject({
      TOKEN_URL: { value: 'https://login.example.com/oauth2/token' },
      TOKEN_SCOPE: { value: 'tickets:read tickets:write' },
      TOKEN_AUTH_METHOD: { value: 'client_secret_basic' },
      UPSTREAM_TIMEOUT_MS: { value: '60000' },
      ACCESS_LOG: { value: 'true' },
    });
    const defaults = await render(['-f', join(chart, 'ci', 'standalone-values.yaml')]);
    for (const kind of ['HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ServiceMonitor']) expect(find(defaults, kind)).toBeUndefined();
  });

  it('passes issuerUrl as ISSUER_URL, without a TOKEN_URL', async () => {
    const container = find(await render(['-f', join(chart, 'ci', 'issuer-values.yaml')]), 'Deployment')!.spec.template.spec.containers[0];
    expect(env(container).ISSUER_URL).toEqual({ name: 'ISSUER_URL', value: 'https://login.example.com/realms/tickets' });
    expect(env(container).TOKEN_URL).toBeUndefined();
  });

  it('creates the Secret on request, and rolls the pods when its content changes', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'created-secret-values.yaml')]);
    const secret = find(objects, 'Secret')!;
    expect(Object.keys(secret.stringData).sort()).toEqual(['client-id', 'client-secret']);
    const pod = find(objects, 'Deployment')!.spec.template;
    expect(env(pod.spec.containers[0]).CLIENT_ID.valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
    const rotated = await render(['-f', join(chart, 'ci', 'created-secret-values.yaml'), '--set', 'clientSecret=rotated']);
    const before = pod.metadata.annotations['checksum/ticket-auth-proxy-secret'];
    const after = find(rotated, 'Deployment')!.spec.template.metadata.annotations['checksum/ticket-auth-proxy-secret'];
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(after).not.toBe(before);
  });
});

/** The file a setting names lies in a read-only mount of the volume made from `source`. */
function expectMounted(container: Obj, volumes: Obj[], setting: string): Obj {
  const path: string = env(container)[setting].value;
  const mount = container.volumeMounts.find((m: Obj) => path.startsWith(`${m.mountPath}/`));
  expect(mount?.readOnly, setting).toBe(true);
  expect(mount.subPath, 'a subPath mount never sees a rotated Secret').toBeUndefined();
  const volume = volumes.find((v) => v.name === mount.name)!;
  const file = path.slice(mount.mountPath.length + 1);
  expect((volume.secret ?? volume.configMap).items).toContainEqual({ key: file, path: file });
  return volume;
}

describe('production networks (docs/networks-and-authentication.md)', () => {
  it('mounts the CA, a kubernetes.io/tls client certificate and takes the proxy URL from a Secret', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'standalone-networks-values.yaml')]);
    for (const o of objects) validateObject(o);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    const proxy = pod.containers[0];
    expectSecureProxy(proxy, pod.volumes, 'standalone');
    expect(expectMounted(proxy, pod.volumes, 'CA_FILE').configMap.name).toBe('corp-root-ca');
    expect(expectMounted(proxy, pod.volumes, 'TLS_CLIENT_CERT_FILE').secret.secretName).toBe('ticket-auth-proxy-client');
    expect(expectMounted(proxy, pod.volumes, 'TLS_CLIENT_KEY_FILE').secret.secretName).toBe('ticket-auth-proxy-client');
    expect(env(proxy).TLS_CLIENT_CERT_FILE.value).toMatch(/\/tls\.crt$/);
    expect(env(proxy).TLS_CLIENT_KEY_FILE.value).toMatch(/\/tls\.key$/);
    expect(env(proxy).HTTPS_PROXY.valueFrom.secretKeyRef).toEqual({ name: 'egress-proxy', key: 'https-proxy', optional: true });
    expect(env(proxy).NO_PROXY.value).toBe('localhost,127.0.0.1,.svc,.cluster.local');
  });

  it.each([
    [
      'a CA from a Secret and a ConfigMap at once',
      ['--set', 'tls.caSecret=a', '--set', 'tls.caConfigMap=b'],
      "at '/tls/caConfigMap': value must be 'empty while tls.caSecret is set: the CA certificates come from one or the other'",
    ],
    [
      'proxy credentials in plain values',
      ['--set', 'egressProxy.httpsProxy=http://user:pw@proxy:3128'],
      "at '/egressProxy/httpsProxy': value must be 'a proxy URL without credentials: put the URL with them in the Secret",
    ],
    [
      'proxy URLs from a Secret and from the values at once',
      ['--set', 'egressProxy.existingSecret=egress', '--set', 'egressProxy.httpProxy=http://proxy:3128'],
      "at '/egressProxy/httpProxy': value must be 'empty while egressProxy.existingSecret holds the proxy URLs",
    ],
  ])('refuses %s', async (_name, args, message) => {
    expect(await renderError(['--set', 'existingSecret=creds', '--set', 'baseUrl=https://x.example', ...args])).toContain(message);
  });
});

/** The DPoP key: DPOP_KEY_FILE in a read-only whole-directory mount of the named Secret's key. */
function expectDpopKey(container: Obj, volumes: Obj[], secretName: string, key: string): void {
  const volume = expectMounted(container, volumes, 'DPOP_KEY_FILE');
  expect(volume.secret.secretName).toBe(secretName);
  expect(env(container).DPOP_KEY_FILE.value.endsWith(`/${key}`)).toBe(true);
}

describe('DPoP (docs/networks-and-authentication.md, "DPoP with Helm")', () => {
  it('passes the mode, the algorithm and a key mounted from an existing Secret', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'dpop-values.yaml')]);
    for (const o of objects) validateObject(o);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    const proxy = pod.containers[0];
    expectSecureProxy(proxy, pod.volumes, 'standalone');
    expect(env(proxy)).toMatchObject({ DPOP: { value: 'required' }, DPOP_ALG: { value: 'ES256' } });
    expectDpopKey(proxy, pod.volumes, 'ticket-auth-proxy-dpop-key', 'tls.key');
  });

  it('sets nothing by default, and with no Secret leaves the key to the proxy, which generates one at start', async () => {
    const defaults = await render(['-f', join(chart, 'ci', 'standalone-values.yaml')]);
    const plain = env(find(defaults, 'Deployment')!.spec.template.spec.containers[0]);
    for (const name of ['DPOP', 'DPOP_KEY_FILE', 'DPOP_ALG']) expect(plain[name], name).toBeUndefined();
    const generated = await render(['-f', join(chart, 'ci', 'standalone-values.yaml'), '--set', 'dpop.mode=on']);
    const pod = find(generated, 'Deployment')!.spec.template.spec;
    expect(env(pod.containers[0]).DPOP.value).toBe('on');
    expect(env(pod.containers[0]).DPOP_KEY_FILE).toBeUndefined();
    expect(pod.volumes.map((v: Obj) => v.name)).toEqual(find(defaults, 'Deployment')!.spec.template.spec.volumes.map((v: Obj) => v.name));
  });

  it.each([
    ['an unknown mode', ['--set', 'dpop.mode=always'], "at '/dpop/mode': value must be one of 'off', 'on', 'required'"],
    ['an empty mode', ['--set', 'dpop.mode='], "at '/dpop/mode': value must be one of 'off', 'on', 'required'"],
    [
      'a bare on, which YAML reads as true',
      ['--set-json', 'dpop.mode=true'],
      `at '/dpop/mode': value must be '"on" (or "required"), in quotes: YAML reads a bare on, yes or true as the boolean true'`,
    ],
    [
      'a bare off, which YAML reads as false',
      ['--set-json', 'dpop.mode=false'],
      `at '/dpop/mode': value must be '"off", in quotes: YAML reads a bare off, no or false as the boolean false'`,
    ],
    [
      'a key while DPoP is off',
      ['--set', 'dpop.existingSecret=dpop-key'],
      `at '/dpop/existingSecret': value must be 'empty while dpop.mode is "off" (a key for DPoP proofs)`,
    ],
  ])('refuses %s with a plain message', async (_name, args, message) => {
    expect(await renderError(['--set', 'existingSecret=creds', '--set', 'baseUrl=https://x.example', ...args])).toContain(message);
  });
});

/** The secretless container: the projected service-account token is the assertion, no Secret anywhere. */
function expectSecretless(container: Obj, volumes: Obj[], audience: string): void {
  const vars = env(container);
  for (const name of Object.keys(vars)) expect(KNOWN_ENV, `${name} is not a setting the proxy reads`).toContain(name);
  expect(vars.TOKEN_AUTH_METHOD.value).toBe('client_assertion_file');
  expect(vars.CLIENT_ID.value).toBe('ticket-proxy');
  expect(vars.CLIENT_SECRET_FILE).toBeUndefined();
  const path: string = vars.CLIENT_ASSERTION_FILE.value;
  const mount = container.volumeMounts.find((m: Obj) => path.startsWith(`${m.mountPath}/`));
  expect(mount?.readOnly).toBe(true);
  expect(mount.subPath, 'a subPath mount never sees the kubelet rotate the token').toBeUndefined();
  const volume = volumes.find((v) => v.name === mount.name)!;
  expect(volume.projected.sources).toEqual([
    { serviceAccountToken: { audience, expirationSeconds: 3600, path: path.slice(mount.mountPath.length + 1) } },
  ]);
  expect(
    volumes.some((v) => v.secret !== undefined),
    'no Secret is needed',
  ).toBe(false);
}

describe('secretless mode (docs/networks-and-authentication.md, "Run without a secret")', () => {
  it('projects the service-account token with the audience and sets it as the client assertion, with no Secret', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'secretless-values.yaml')]);
    for (const o of objects) validateObject(o);
    expect(objects.map((o) => o.kind)).not.toContain('Secret');
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    expect(pod.serviceAccountName).toBe('ticket-auth-proxy');
    expectSecretless(pod.containers[0], pod.volumes, 'api://AzureADTokenExchange');
  });

  it('creates the service account whose token is projected, with its annotations, and runs the pods as it', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'secretless-values.yaml')]);
    const account = find(objects, 'ServiceAccount')!;
    expect(account.metadata.name).toBe('ticket-auth-proxy');
    expect(account.metadata.annotations).toEqual({ 'azure.workload.identity/client-id': '00000000-0000-0000-0000-000000000000' });
    expect(account.automountServiceAccountToken).toBe(false);
    expect(find(objects, 'Deployment')!.spec.template.spec.serviceAccountName).toBe(account.metadata.name);

    // By default: created, named as the other objects.
    const byDefault = await render([...secretless, '--set', 'auth.serviceAccountToken.audience=a']);
    const created = find(byDefault, 'ServiceAccount')!;
    expect(created.metadata.name).toBe(find(byDefault, 'Deployment')!.metadata.name);
    expect(find(byDefault, 'Deployment')!.spec.template.spec.serviceAccountName).toBe(created.metadata.name);

    // An existing account: named, not rendered.
    const existing = await render([
      ...secretless,
      '--set',
      'auth.serviceAccountToken.audience=a',
      '--set',
      'serviceAccount.create=false',
      '--set',
      'serviceAccount.name=federated-proxy',
    ]);
    expect(find(existing, 'ServiceAccount')).toBeUndefined();
    expect(find(existing, 'Deployment')!.spec.template.spec.serviceAccountName).toBe('federated-proxy');

    // Sidecar mode: the parent pod's account; none rendered.
    expect(find(await render(['-f', join(chart, 'ci', 'sidecar-values.yaml')]), 'ServiceAccount')).toBeUndefined();
  });

  const secretless = [
    '--set',
    'baseUrl=https://x.example',
    '--set',
    'clientId=ticket-proxy',
    '--set',
    'auth.serviceAccountToken.enabled=true',
  ];
  it.each([
    [
      'a Secret as well',
      [...secretless, '--set', 'auth.serviceAccountToken.audience=a', '--set', 'existingSecret=creds'],
      /at '\/existingSecret': value must be 'empty with auth.serviceAccountToken.enabled: the projected token replaces the client secret'/,
    ],
    ['no audience', secretless, /at '\/auth\/serviceAccountToken\/audience': value must be 'the audience the identity provider expects/],
    [
      'no clientId',
      [
        '--set',
        'baseUrl=https://x.example',
        '--set',
        'auth.serviceAccountToken.enabled=true',
        '--set',
        'auth.serviceAccountToken.audience=a',
      ],
      /at '\/clientId': value must be 'the client the identity provider federates the service account with/,
    ],
  ])('refuses %s', async (_name, args, message) => {
    expect(await renderError(args)).toMatch(message);
  });
});

describe('http: gateways (ALLOW_INSECURE_HTTP)', () => {
  it('accepts an http: baseUrl on loopback, and off loopback only with allowInsecureHttp, which it passes on', async () => {
    const loopback = await render(['--set', 'existingSecret=creds', '--set', 'baseUrl=http://127.0.0.1:8080']);
    expect(env(find(loopback, 'Deployment')!.spec.template.spec.containers[0]).ALLOW_INSECURE_HTTP).toBeUndefined();
    const objects = await render([
      '--set',
      'existingSecret=creds',
      '--set',
      'baseUrl=http://tickets.internal',
      '--set',
      'allowInsecureHttp=true',
    ]);
    expect(env(find(objects, 'Deployment')!.spec.template.spec.containers[0]).ALLOW_INSECURE_HTTP.value).toBe('true');
  });
});

describe('values.schema.json and the chart refuse bad values, naming them', () => {
  const base = ['--set', 'existingSecret=creds'];
  it.each([
    ['a missing baseUrl', [...base], /baseUrl/],
    ['a baseUrl that is no URL', [...base, '--set', 'baseUrl=tickets.example.com'], /baseUrl/],
    ['an http: baseUrl for a host off loopback, as the proxy would', [...base, '--set', 'baseUrl=http://tickets.example.com'], /baseUrl/],
    [
      'an http: tokenUrl for a host off loopback',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'tokenUrl=http://idp.example/token'],
      /tokenUrl/,
    ],
    [
      'an issuerUrl beside a tokenUrl, with a plain sentence',
      [
        ...base,
        '--set',
        'baseUrl=https://x.example',
        '--set',
        'issuerUrl=https://idp.example/realms/t',
        '--set',
        'tokenUrl=https://idp.example/realms/t/protocol/openid-connect/token',
      ],
      /at '\/tokenUrl': value must be 'empty when issuerUrl is set: the issuer metadata names the token endpoint, so set one or the other'/,
    ],
    [
      'an http: issuerUrl for a host off loopback',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'issuerUrl=http://idp.example/realms/t'],
      /at '\/issuerUrl': value must be 'https, or http: for a loopback host only, unless allowInsecureHttp is true/,
    ],
    [
      'a string replica count',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'replicaCount=two'],
      /replicaCount.*(integer|string)/,
    ],
    ['a port out of range', [...base, '--set', 'baseUrl=https://x.example', '--set', 'listenPort=70000'], /at '\/listenPort': maximum/],
    [
      'the listener port under its old name',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'proxyPort=9180'],
      /at '\/proxyPort': value must be 'renamed to listenPort, the name of its key in the configuration file'/,
    ],
    [
      'the drain timeout under its old name',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'shutdown.drainTimeoutSeconds=20'],
      /at '\/shutdown\/drainTimeoutSeconds': value must be 'renamed to timeoutS \(shutdownTimeoutS\)/,
    ],
    [
      'the assertion type under its old name',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'auth.serviceAccountToken.assertionType=urn:x'],
      /at '\/auth\/serviceAccountToken\/assertionType': value must be 'renamed to clientAssertionType/,
    ],
    [
      'a socket in standalone mode, which serves other pods over TCP',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'listenSocket=/var/run/tap/proxy.sock'],
      /at '\/listenSocket': value must be 'empty in mode: standalone \(other pods reach the proxy through its Service, over TCP\): a socket is for mode: sidecar'/,
    ],
    [
      "a socket path that is not absolute or has no directory of its own for the chart's volume",
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'mode=sidecar', '--set', 'listenSocket=proxy.sock'],
      /at '\/listenSocket': value must be 'an absolute path to the socket file in a directory of its own/,
    ],
    [
      'a socket mode YAML read as a number',
      [
        ...base,
        '--set',
        'baseUrl=https://x.example',
        '--set',
        'mode=sidecar',
        '--set',
        'listenSocket=/run/tap/p.sock',
        '--set',
        'listenSocketMode=660',
      ],
      /at '\/listenSocketMode': value must be 'an octal file mode as a string, such as "0660": in quotes in YAML/,
    ],
    ['an unknown key', [...base, '--set', 'baseUrl=https://x.example', '--set', 'replicas=3'], /replicas/],
    ['an unknown log level', [...base, '--set', 'baseUrl=https://x.example', '--set', 'logLevel=loud'], /logLevel/],
    [
      'no credentials',
      ['--set', 'baseUrl=https://x.example'],
      /at '\/existingSecret': value must be 'the name of a Secret with the keys client-id and client-secret/,
    ],
    [
      'a created Secret without its secret',
      ['--set', 'baseUrl=https://x.example', '--set', 'createSecret=true', '--set', 'clientId=a'],
      /at '\/clientSecret': value must be 'the client secret \(required with createSecret: true\)'/,
    ],
    [
      'a created Secret beside an existing one',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'createSecret=true', '--set', 'clientId=a', '--set', 'clientSecret=s'],
      /at '\/existingSecret': value must be 'empty with createSecret: true \(the chart creates the Secret\): set one or the other'/,
    ],
    [
      'a grace period too short to drain',
      [...base, '--set', 'baseUrl=https://x.example', '--set', 'terminationGracePeriodSeconds=10'],
      /terminationGracePeriodSeconds/,
    ],
  ])('refuses %s', async (_name, args, message) => {
    expect(await renderError(args)).toMatch(message);
  });
});

describe('sidecar mode, through a parent chart', () => {
  let parent: string;
  beforeAll(async () => {
    parent = await buildParentChart(work);
  });
  const parentChart = (): string => parent;

  it('gives the sidecar in a parent pod the same mounts and settings', async () => {
    const objects = await render(
      [
        '--set',
        'ticket-auth-proxy.tls.caSecret=corp-ca',
        '--set',
        'ticket-auth-proxy.tls.clientCertSecret=client-tls',
        '--set',
        'ticket-auth-proxy.egressProxy.httpsProxy=http://proxy.corp:3128',
      ],
      parentChart(),
    );
    for (const o of objects) validateObject(o);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    const sidecar = pod.initContainers.find((c: Obj) => c.name === 'ticket-auth-proxy');
    expectSecureProxy(sidecar, pod.volumes, 'sidecar');
    expect(expectMounted(sidecar, pod.volumes, 'CA_FILE').secret.secretName).toBe('corp-ca');
    expect(expectMounted(sidecar, pod.volumes, 'TLS_CLIENT_KEY_FILE').secret.secretName).toBe('client-tls');
    expect(env(sidecar).HTTPS_PROXY.value).toBe('http://proxy.corp:3128');
  });

  it('gives the sidecar in a parent pod the projected token instead of a Secret in secretless mode', async () => {
    const objects = await render(
      [
        '--set',
        'ticket-auth-proxy.existingSecret=',
        '--set',
        'ticket-auth-proxy.clientId=ticket-proxy',
        '--set',
        'ticket-auth-proxy.auth.serviceAccountToken.enabled=true',
        '--set',
        'ticket-auth-proxy.auth.serviceAccountToken.audience=https://kubernetes.example/idp',
      ],
      parentChart(),
    );
    for (const o of objects) validateObject(o);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    expectSecretless(
      pod.initContainers.find((c: Obj) => c.name === 'ticket-auth-proxy'),
      pod.volumes,
      'https://kubernetes.example/idp',
    );
  });

  it.each([
    ['native', [], 'initContainers'],
    ['classic', ['--set', 'ticket-auth-proxy.sidecar.native=false'], 'containers'],
  ])('gives the %s sidecar the DPoP mode, algorithm and key mount', async (_form, args, list) => {
    const dpop = [
      '--set',
      'ticket-auth-proxy.dpop.mode=on',
      '--set',
      'ticket-auth-proxy.dpop.alg=EdDSA',
      '--set',
      'ticket-auth-proxy.dpop.existingSecret=app-dpop-key',
    ];
    const objects = await render([...dpop, ...args], parentChart());
    for (const o of objects) validateObject(o);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    const sidecar = pod[list].find((c: Obj) => c.name === 'ticket-auth-proxy');
    expectSecureProxy(sidecar, pod.volumes, 'sidecar');
    expect(env(sidecar)).toMatchObject({ DPOP: { value: 'on' }, DPOP_ALG: { value: 'EdDSA' } });
    expectDpopKey(sidecar, pod.volumes, 'app-dpop-key', 'dpop-key.pem');
  });

  it('renders no workload of its own in sidecar mode', async () => {
    const objects = await render(['-f', join(chart, 'ci', 'sidecar-values.yaml')]);
    expect(objects.map((o) => o.kind)).toEqual(['Secret']);
  });

  it('puts a native sidecar (an init container with restartPolicy: Always) on loopback into the parent pod', async () => {
    // `enabled` is what a parent's `condition: ticket-auth-proxy.enabled` reads: the schema lets it pass.
    const objects = await render(['--set', 'ticket-auth-proxy.enabled=true'], parentChart());
    for (const o of objects) validateObject(o);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    const sidecar = pod.initContainers.find((c: Obj) => c.name === 'ticket-auth-proxy');
    expect(sidecar.restartPolicy).toBe('Always');
    expect(pod.containers.map((c: Obj) => c.name)).toEqual(['legacy-app']);
    expectSecureProxy(sidecar, pod.volumes, 'sidecar');
    expect(env(sidecar).LISTEN_HOST.value).toBe('127.0.0.1');
    expect(sidecar.image).toBe(
      `registry.example.invalid/ticket-auth-proxy:${/appVersion: "([^"]+)"/.exec(readFileSync(join(chart, 'Chart.yaml'), 'utf8'))![1]}`,
    );
    // Stopped after the app by Kubernetes itself: no keep-serving delay needed.
    expect(sidecar.lifecycle).toBeUndefined();
    expect(env(sidecar).SHUTDOWN_DELAY_S.value).toBe('0');
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(shutdownSeconds(sidecar));
  });

  it('puts a classic sidecar container beside the app on request, serving on through a preStop sleep', async () => {
    const objects = await render(['--set', 'ticket-auth-proxy.sidecar.native=false'], parentChart());
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    expect(pod.initContainers).toBeUndefined();
    expect(pod.containers.map((c: Obj) => c.name)).toEqual(['legacy-app', 'ticket-auth-proxy']);
    const sidecar = pod.containers[1];
    expect(sidecar.restartPolicy).toBeUndefined();
    expectSecureProxy(sidecar, pod.volumes, 'sidecar');
    expect(sidecar.lifecycle.preStop.sleep.seconds).toBe(5);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(shutdownSeconds(sidecar));
  });

  it.each([
    ['native', [], 'initContainers'],
    ['classic', ['--set', 'ticket-auth-proxy.sidecar.native=false'], 'containers'],
  ])('puts the %s sidecar on a Unix socket in a volume only it and the app mount, which the pod group owns', async (_form, args, list) => {
    const path = '/var/run/ticket-auth-proxy/proxy.sock';
    const objects = await render(['--set', `ticket-auth-proxy.listenSocket=${path}`, ...args], parentChart());
    for (const o of objects) validateObject(o);
    const pod = find(objects, 'Deployment')!.spec.template.spec;
    const sidecar = pod[list].find((c: Obj) => c.name === 'ticket-auth-proxy');
    expectHardenedProxy(sidecar, pod.volumes, 'sidecar');
    const vars = env(sidecar);
    expect(vars.LISTEN_SOCKET.value).toBe(path);
    expect(vars.LISTEN_SOCKET_MODE.value).toBe('0660');
    expect([vars.LISTEN_HOST, vars.LISTEN_PORT]).toEqual([undefined, undefined]);
    // No proxy port: nothing reaches the proxy but through the socket. The probes' port stays.
    expect(sidecar.ports.map((p: Obj) => p.name)).toEqual(['admin']);
    const app = pod.containers.find((c: Obj) => c.name === 'legacy-app');
    const socketMount = { name: 'ticket-auth-proxy-socket', mountPath: '/var/run/ticket-auth-proxy' };
    expect(sidecar.volumeMounts).toContainEqual(socketMount);
    expect(app.volumeMounts).toEqual([socketMount]);
    expect(pod.volumes.find((v: Obj) => v.name === socketMount.name).emptyDir).toBeDefined();
    // The volume's group, which every container of the pod joins: the app's user opens the 0660 socket.
    expect(pod.securityContext.fsGroup).toEqual(expect.any(Number));
    expect(app.env).toEqual(
      expect.arrayContaining([
        { name: 'TICKETS_BASE_URL', value: 'http://localhost' },
        { name: 'TICKETS_SOCKET', value: path },
      ]),
    );
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(shutdownSeconds(sidecar));
  });

  it('gives the app no socket, volume or pod group on loopback', async () => {
    const pod = find(await render([], parentChart()), 'Deployment')!.spec.template.spec;
    const app = pod.containers.find((c: Obj) => c.name === 'legacy-app');
    expect(app.volumeMounts).toBeUndefined();
    expect(pod.securityContext).toBeUndefined();
    expect(pod.volumes.map((v: Obj) => v.name)).toEqual(['ticket-auth-proxy-credentials']);
  });

  it('mounts the Secret the dependency creates, and rolls the parent pods when it changes', async () => {
    const quickStart = [
      '--set',
      'ticket-auth-proxy.existingSecret=',
      '--set',
      'ticket-auth-proxy.createSecret=true',
      '--set',
      'ticket-auth-proxy.clientId=app',
    ];
    const objects = await render([...quickStart, '--set', 'ticket-auth-proxy.clientSecret=one'], parentChart());
    for (const o of objects) validateObject(o);
    const secret = find(objects, 'Secret')!;
    expect(secret.stringData).toEqual({ 'client-id': 'app', 'client-secret': 'one' });
    const template = find(objects, 'Deployment')!.spec.template;
    const sidecar = template.spec.initContainers[0];
    expectSecureProxy(sidecar, template.spec.volumes, 'sidecar');
    expect(env(sidecar).CLIENT_ID.valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
    const rotated = await render([...quickStart, '--set', 'ticket-auth-proxy.clientSecret=two'], parentChart());
    const checksum = (t: Obj): string => t.metadata.annotations['checksum/ticket-auth-proxy-secret'];
    expect(checksum(find(rotated, 'Deployment')!.spec.template)).not.toBe(checksum(template));
  });
});

describe('the sidecar preview (sidecar.preview)', () => {
  it('shows the sidecar on a Unix socket as a parent pod gets it, the socket mounted into the app', async () => {
    const path = '/var/run/ticket-auth-proxy/proxy.sock';
    const objects = await render(['-f', join(root, 'examples', 'helm', 'sidecar-preview-values.yaml'), '--set', `listenSocket=${path}`]);
    for (const o of objects) validateObject(o);
    const pod = find(objects, 'Pod')!.spec;
    const [sidecar] = pod.initContainers;
    expectHardenedProxy(sidecar, pod.volumes, 'sidecar');
    expect(env(sidecar).LISTEN_SOCKET.value).toBe(path);
    expect(pod.containers[0].volumeMounts).toEqual([{ name: 'ticket-auth-proxy-socket', mountPath: '/var/run/ticket-auth-proxy' }]);
    expect(pod.securityContext.fsGroup).toEqual(expect.any(Number));
  });

  it.each([
    ['a directory the chart mounts another volume at', '/var/run/secrets/ticket-auth-proxy/proxy.sock', 'listenSocket'],
    ['a directory above one', '/var/run/secrets/proxy.sock', 'listenSocket'],
  ])('refuses a socket in %s', async (_name, path, named) => {
    const stderr = await renderError([
      '-f',
      join(root, 'examples', 'helm', 'sidecar-preview-values.yaml'),
      '--set',
      `listenSocket=${path}`,
    ]);
    expect(stderr).toContain(`ticket-auth-proxy: ${named}'s directory`);
    expect(stderr).toContain('choose a directory of its own');
  });
});

describe('the plain manifest for kubectl users', () => {
  it('is a valid Deployment with the proxy as a secure native sidecar', () => {
    const objects = parse(readFileSync(join(root, 'examples', 'kubernetes', 'native-sidecar.yaml'), 'utf8'));
    expect(objects).toHaveLength(1);
    const deployment = objects[0]!;
    validateObject(deployment);
    const pod = deployment.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.initContainers.map((c: Obj) => c.name)).toEqual(['ticket-auth-proxy']);
    const sidecar = pod.initContainers[0];
    expect(sidecar.restartPolicy).toBe('Always');
    expectHardenedProxy(sidecar, pod.volumes, 'sidecar');
    // The proxy's defaults: loopback listener on 8180, which the app is pointed at.
    expect(env(sidecar).LISTEN_HOST.value).toBe('127.0.0.1');
    expect(env(sidecar).LISTEN_PORT).toBeUndefined();
    expect(pod.containers[0].env).toContainEqual({ name: 'TICKETS_BASE_URL', value: 'http://127.0.0.1:8180' });
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(shutdownSeconds(sidecar));
  });
});
