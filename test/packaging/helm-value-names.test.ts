/**
 * A chart value that means the same as a setting of the proxy has the name of the setting's key in
 * the configuration file, within its group (`listenPort` is `listenPort`, `dpop.alg` is `dpopAlg`),
 * so that who knows one knows the other. Each such value is rendered by a real helm to show which
 * variable it sets; every other value of values.yaml is listed with why it is the chart's own.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SETTINGS } from '../../src/config/config.js';
import { helm } from './helm-binary.js';
import { envOf, findKind, type Obj, parseObjects } from './k8s-objects.js';

const chart = join(import.meta.dirname, '..', '..', 'helm', 'ticket-auth-proxy');
const work = mkdtempSync(join(tmpdir(), 'tap-helm-names-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * Values passed on as a setting: a value to render with, the variable it must set, what else it
 * needs, and the variables it replaces or brings along, when it does.
 */
type SettingValue = [path: string, probe: string | number | boolean, env: string, needs?: Record<string, unknown>, alsoChanges?: string[]];
/** The sidecar as the preview Pod holds it, for the values that are the sidecar's alone. */
const SIDECAR = { mode: 'sidecar', sidecar: { preview: true } };
const SETTING_VALUES: SettingValue[] = [
  ['baseUrl', 'https://probe.example/gw', 'BASE_URL'],
  ['tokenUrl', 'https://idp.probe.example/token', 'TOKEN_URL'],
  ['issuerUrl', 'https://idp.probe.example/realms/probe', 'ISSUER_URL'],
  ['allowInsecureHttp', true, 'ALLOW_INSECURE_HTTP'],
  ['tokenScope', 'probe:read', 'TOKEN_SCOPE'],
  ['tokenAuthMethod', 'client_secret_basic', 'TOKEN_AUTH_METHOD'],
  ['listenPort', 9180, 'LISTEN_PORT'],
  ['adminPort', 9181, 'ADMIN_PORT'],
  // The socket replaces the TCP address, and brings its mode.
  ['listenSocket', '/var/run/probe/proxy.sock', 'LISTEN_SOCKET', SIDECAR, ['LISTEN_HOST', 'LISTEN_PORT', 'LISTEN_SOCKET_MODE']],
  ['listenSocketMode', '0600', 'LISTEN_SOCKET_MODE', { ...SIDECAR, listenSocket: '/var/run/probe/proxy.sock' }],
  ['logLevel', 'debug', 'LOG_LEVEL'],
  ['accessLog', true, 'ACCESS_LOG'],
  ['metricsRuntime', 'full', 'METRICS_RUNTIME'],
  ['shutdown.timeoutS', 21, 'SHUTDOWN_TIMEOUT_S'],
  ['dpop.mode', 'required', 'DPOP'],
  ['dpop.alg', 'EdDSA', 'DPOP_ALG', { dpop: { mode: 'on' } }],
  ['egressProxy.httpsProxy', 'http://egress.probe.example:3128', 'HTTPS_PROXY'],
  ['egressProxy.httpProxy', 'http://egress.probe.example:3128', 'HTTP_PROXY'],
  ['egressProxy.noProxy', '.probe.example', 'NO_PROXY'],
  ['tokenStore.url', 'redis://probe-redis:6379', 'TOKEN_STORE_URL', { tokenStore: { url: 'redis://another-redis:6379' } }],
  ['tokenStore.mode', 'cluster', 'TOKEN_STORE_MODE', { tokenStore: { url: 'redis://probe-redis:6379' } }],
  ['tokenStore.prefix', 'probe:', 'TOKEN_STORE_PREFIX', { tokenStore: { url: 'redis://probe-redis:6379' } }],
  ['tokenStore.timeoutMs', 321, 'TOKEN_STORE_TIMEOUT_MS', { tokenStore: { url: 'redis://probe-redis:6379' } }],
  ['tokenStore.scripts', 'functions', 'TOKEN_STORE_SCRIPTS', { tokenStore: { url: 'redis://probe-redis:6379' } }],
  ['tracing.endpoint', 'https://otel.probe.example', 'OTEL_EXPORTER_OTLP_ENDPOINT'],
  ['tracing.sampler', 'traceidratio', 'OTEL_TRACES_SAMPLER', { tracing: { endpoint: 'https://otel.probe.example' } }],
  ['tracing.samplerArg', 0.25, 'OTEL_TRACES_SAMPLER_ARG', { tracing: { endpoint: 'https://otel.probe.example' } }],
  // Secretless: the client id is a value, and the assertion type a setting.
  [
    'clientId',
    'probe-client',
    'CLIENT_ID',
    { existingSecret: '', clientId: 'another-client', auth: { serviceAccountToken: { enabled: true, audience: 'api://probe' } } },
  ],
  [
    'auth.serviceAccountToken.clientAssertionType',
    'urn:probe:assertion-type',
    'CLIENT_ASSERTION_TYPE',
    { existingSecret: '', clientId: 'probe-client', auth: { serviceAccountToken: { enabled: true, audience: 'api://probe' } } },
  ],
];

/** A value that is a setting under another name, and why. */
const RENAMED: Record<string, string> = {
  // The contract names it so: the switch of the dpop group is DPOP, the file's `dpop`.
  'dpop.mode': 'dpop',
};

/** The chart's own values (or groups of them), and why none is named as a setting. */
const CHART_ONLY: Record<string, string> = {
  mode: 'standalone or sidecar: what the chart renders',
  fullnameOverride: 'object names',
  image: 'the container image',
  imagePullSecrets: 'the pod spec',
  existingSecret: 'a Secret name; the proxy reads the files mounted from it',
  createSecret: 'whether the chart makes that Secret',
  clientSecret: 'written into the Secret, read by the proxy from CLIENT_SECRET_FILE (and named as the file key)',
  'auth.serviceAccountToken.enabled': 'projects a service-account token (TOKEN_AUTH_METHOD=client_assertion_file)',
  'auth.serviceAccountToken.audience': 'of the projected token',
  'auth.serviceAccountToken.expirationSeconds': 'of the projected token',
  'dpop.existingSecret': 'a Secret name; DPOP_KEY_FILE is the file mounted from it',
  'dpop.existingSecretKey': 'a key of that Secret',
  tls: 'Secret and ConfigMap names; CA_FILE and TLS_CLIENT_*_FILE are the files mounted from them',
  'egressProxy.existingSecret': 'a Secret name holding HTTPS_PROXY and HTTP_PROXY',
  'egressProxy.httpsProxyKey': 'a key of that Secret',
  'egressProxy.httpProxyKey': 'a key of that Secret',
  'tokenStore.existingSecret': 'a Secret name; TOKEN_STORE_PASSWORD_FILE and TOKEN_STORE_KEY_FILE are the files mounted from it',
  'tokenStore.passwordKey': 'a key of that Secret',
  'tokenStore.keyFileKey': 'a key of that Secret',
  'tokenStore.networkPolicyTo': 'the NetworkPolicy',
  'tracing.existingSecret': 'a Secret name; OTEL_EXPORTER_OTLP_HEADERS is set from it',
  'tracing.headersKey': 'a key of that Secret',
  routes: "the configuration file's routes, each with its own keys: written into a ConfigMap the proxy reads as CONFIG_FILE",
  extraEnv: 'any setting, by its variable name',
  nodeOptions: "Node's NODE_OPTIONS, not a setting",
  'shutdown.keepServingSeconds': 'a preStop sleep where the cluster has one, else SHUTDOWN_DELAY_S: not one setting',
  terminationGracePeriodSeconds: 'the pod spec',
  resources: 'the container spec',
  sidecar: 'the sidecar form',
  serviceAccount: 'the ServiceAccount',
  replicaCount: 'the Deployment',
  service: 'the Service',
  networkPolicy: 'the NetworkPolicy',
  autoscaling: 'the HorizontalPodAutoscaler',
  podDisruptionBudget: 'the PodDisruptionBudget',
  serviceMonitor: 'the ServiceMonitor',
  prometheusRule: 'the PrometheusRule',
  grafanaDashboard: 'the dashboard ConfigMap',
  podAnnotations: 'the pod spec',
  podLabels: 'the pod spec',
  nodeSelector: 'the pod spec',
  tolerations: 'the pod spec',
  affinity: 'the pod spec',
};

/** The values file entries that hold a value of their own, as dotted paths (a listed path is one value). */
function leaves(value: unknown, listed: Set<string>, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [prefix];
  return Object.entries(value).flatMap(([key, child]) => {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    return listed.has(path) ? [path] : leaves(child, listed, path);
  });
}

/** `{a: {b: v}}` for `a.b`. */
function nested(path: string, value: unknown): Record<string, unknown> {
  return path
    .split('.')
    .reverse()
    .reduce<unknown>((inner, key) => ({ [key]: inner }), value) as Record<string, unknown>;
}

/** Deep merge of plain objects. */
function merge(...parts: Record<string, unknown>[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const part of parts) {
    for (const [key, value] of Object.entries(part)) {
      const prior = out[key];
      out[key] =
        prior && typeof prior === 'object' && value && typeof value === 'object' && !Array.isArray(value)
          ? merge(prior as Record<string, unknown>, value as Record<string, unknown>)
          : value;
    }
  }
  return out;
}

let files = 0;
/** The environment of the proxy container rendered with `values`: the standalone one, or the sidecar preview's. */
async function renderedEnv(values: Record<string, unknown>): Promise<Record<string, Obj>> {
  const file = join(work, `values-${files++}.yaml`);
  writeFileSync(file, JSON.stringify(values));
  const result = await helm(['template', 'rel', chart, '-f', file]);
  expect(result.stderr).toBe('');
  const objects = parseObjects(result.stdout);
  const deployment = findKind(objects, 'Deployment');
  return envOf(deployment ? deployment.spec.template.spec.containers[0] : findKind(objects, 'Pod')!.spec.initContainers[0]);
}

describe("the chart's values", () => {
  it('are each either a setting of the proxy or listed as the chart’s own', () => {
    const values = parseYaml(readFileSync(join(chart, 'values.yaml'), 'utf8')) as unknown;
    const settings = SETTING_VALUES.map(([path]) => path);
    const listed = new Set([...settings, ...Object.keys(CHART_ONLY)]);
    expect(leaves(values, listed).filter((path) => !listed.has(path))).toEqual([]);
  });

  it.each(SETTING_VALUES)('pass %s on as the setting it is named after (%s sets %s)', async (path, probe, name, needs = {}, also = []) => {
    const base = { baseUrl: 'https://tickets.example.com', existingSecret: 'creds' };
    const before = await renderedEnv(merge(base, needs));
    const after = await renderedEnv(merge(base, needs, nested(path, probe)));
    const changed = Object.keys({ ...before, ...after }).filter((v) => JSON.stringify(before[v]) !== JSON.stringify(after[v]));
    expect(changed.sort()).toEqual([name, ...also].sort());
    expect(after[name]!.value).toBe(String(probe));
  });

  it.each(SETTING_VALUES.map(([path, , name]) => [path, name] as const))('name %s as the configuration file names %s', (path, name) => {
    const key = SETTINGS.find((s) => s.env === name)!.key;
    if (RENAMED[path] !== undefined) {
      expect(key).toBe(RENAMED[path]);
      return;
    }
    const [leaf, group] = path.split('.').reverse() as [string, string | undefined];
    const inGroup = group === undefined ? leaf : `${group}${leaf[0]!.toUpperCase()}${leaf.slice(1)}`;
    expect([leaf, inGroup], `${path} means ${name}, the file's ${key}`).toContain(key);
  });
});
