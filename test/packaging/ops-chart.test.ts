/**
 * The chart's operations kit: the PrometheusRule and the Grafana dashboard ConfigMap render, off
 * by default, from the very files shipped in ops/ (one source each).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { helm } from './helm-binary.js';
import { findKind as find, type Obj, parseObjects as parse } from './k8s-objects.js';

const root = join(import.meta.dirname, '..', '..');
const chart = join(root, 'helm', 'ticket-auth-proxy');

async function render(args: string[]): Promise<Obj[]> {
  const result = await helm([
    'template',
    'rel',
    chart,
    '--namespace',
    'tickets',
    '--set',
    'baseUrl=https://tickets.example.com',
    '--set',
    'existingSecret=creds',
    ...args,
  ]);
  if (result.code !== 0) throw new Error(`helm template ${args.join(' ')} failed:\n${result.stderr}`);
  return parse(result.stdout);
}

describe('the chart operations kit', () => {
  it('renders neither a PrometheusRule nor a dashboard ConfigMap by default', async () => {
    const objects = await render([]);
    expect(objects.map((o) => o.kind)).not.toContain('PrometheusRule');
    expect(objects.filter((o) => o.kind === 'ConfigMap')).toEqual([]);
  });

  it('renders the PrometheusRule with the rules of ops/prometheus verbatim and the labels asked for', async () => {
    const objects = await render(['--set', 'prometheusRule.enabled=true', '--set', 'prometheusRule.labels.release=kps']);
    const rule = find(objects, 'PrometheusRule')!;
    expect(rule.metadata.labels.release).toBe('kps');
    expect(rule.spec).toEqual(parseYaml(readFileSync(join(root, 'ops/prometheus/ticket-auth-proxy-rules.yaml'), 'utf8')));
  });

  it('renders the dashboard ConfigMap for the Grafana sidecar with the JSON of ops/grafana verbatim', async () => {
    const objects = await render(['--set', 'grafanaDashboard.enabled=true', '--set', 'mode=sidecar']);
    const map = objects.find((o) => o.kind === 'ConfigMap') as Obj;
    expect(map.metadata.labels.grafana_dashboard).toBe('1');
    const json = readFileSync(join(root, 'ops/grafana/ticket-auth-proxy-dashboard.json'), 'utf8');
    expect(JSON.parse(map.data['ticket-auth-proxy.json'] as string)).toEqual(JSON.parse(json));
  });
});

describe('the pod template annotations', () => {
  it('carry no Secret checksum with an existingSecret, whose content the chart does not know', async () => {
    const objects = await render([]);
    const annotations = (find(objects, 'Deployment')!.spec.template.metadata.annotations ?? {}) as Record<string, string>;
    expect(Object.keys(annotations)).not.toContain('checksum/ticket-auth-proxy-secret');
  });
});

describe('the NetworkPolicy with a ServiceMonitor', () => {
  it('refuses, in helm template and helm lint, with the value to set when Prometheus could not reach /metrics', async () => {
    const values = [
      '--set',
      'baseUrl=https://tickets.example.com',
      '--set',
      'existingSecret=creds',
      '--set',
      'serviceMonitor.enabled=true',
    ];
    const message = "at '/networkPolicy/metricsNamespaceLabels': value must be 'the labels of the namespace Prometheus runs in";
    const result = await helm(['template', 'rel', chart, ...values]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(message);
    const lint = await helm(['lint', chart, ...values]);
    expect(lint.code).not.toBe(0);
    expect(lint.stdout).toContain(message);
  });

  it('lets the namespace named by metricsNamespaceLabels reach the admin port', async () => {
    const objects = await render([
      '--set',
      'serviceMonitor.enabled=true',
      '--set',
      'networkPolicy.metricsNamespaceLabels.kubernetes\\.io/metadata\\.name=monitoring',
    ]);
    const policy = find(objects, 'NetworkPolicy')!;
    expect(policy.spec.ingress).toContainEqual({
      from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      ports: [{ port: 'admin', protocol: 'TCP' }],
    });
  });
});
