/**
 * The chart's tracing values, rendered by a real helm: the collector, the sampler and the
 * collector's headers (an API key) from an existing Secret, in the standalone Deployment and in the
 * sidecar a parent chart's pod includes, native and classic. What the proxy would refuse of them is
 * refused at render (test/packaging/helm-refusals.test.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { readDoc, section } from '../helpers/docs.js';
import { helm } from './helm-binary.js';
import { envOf, findKind, type Obj, parseObjects, validateObject } from './k8s-objects.js';
import { buildParentChart } from './parent-chart.js';

const chart = join(import.meta.dirname, '..', '..', 'helm', 'ticket-auth-proxy');
const work = mkdtempSync(join(tmpdir(), 'tap-helm-tracing-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const TRACING = {
  endpoint: 'https://otel.example.com:4318',
  sampler: 'parentbased_traceidratio',
  samplerArg: 0.05,
  existingSecret: 'otlp-credentials',
};

/** The variables tracing sets, with the Secret's reference as rendered. */
const TRACING_ENV = {
  OTEL_EXPORTER_OTLP_ENDPOINT: { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'https://otel.example.com:4318' },
  OTEL_TRACES_SAMPLER: { name: 'OTEL_TRACES_SAMPLER', value: 'parentbased_traceidratio' },
  OTEL_TRACES_SAMPLER_ARG: { name: 'OTEL_TRACES_SAMPLER_ARG', value: '0.05' },
  OTEL_EXPORTER_OTLP_HEADERS: {
    name: 'OTEL_EXPORTER_OTLP_HEADERS',
    valueFrom: { secretKeyRef: { name: 'otlp-credentials', key: 'otlp-headers' } },
  },
};

let files = 0;
async function render(values: Record<string, unknown>, chartDir = chart): Promise<Obj[]> {
  const file = join(work, `values-${files++}.yaml`);
  writeFileSync(file, JSON.stringify(values));
  const result = await helm(['template', 'rel', chartDir, '-f', file]);
  if (result.code !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  const objects = parseObjects(result.stdout);
  for (const o of objects) validateObject(o);
  return objects;
}

const tracingVars = (env: Record<string, Obj>): string[] => Object.keys(env).filter((name) => name.startsWith('OTEL_'));

describe('the chart with traces', () => {
  const STANDALONE = { existingSecret: 'creds', baseUrl: 'https://tickets.example.com' };
  const proxyOf = (objects: Obj[]): Obj => findKind(objects, 'Deployment')!.spec.template.spec.containers[0];

  it('sets no OpenTelemetry variable without tracing.endpoint', async () => {
    expect(tracingVars(envOf(proxyOf(await render(STANDALONE))))).toEqual([]);
  });

  it("gives the standalone proxy the collector, the sampler, its ratio, and the headers from the Secret's key", async () => {
    const env = envOf(proxyOf(await render({ ...STANDALONE, tracing: TRACING })));
    expect(Object.fromEntries(tracingVars(env).map((name) => [name, env[name]]))).toEqual(TRACING_ENV);
  });

  it('names the key of the Secret the headers are read from, and sets only what is given', async () => {
    const env = envOf(
      proxyOf(
        await render({ ...STANDALONE, tracing: { endpoint: 'https://otel.example.com', existingSecret: 's', headersKey: 'api-key' } }),
      ),
    );
    expect(tracingVars(env).sort()).toEqual(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_HEADERS']);
    expect(env.OTEL_EXPORTER_OTLP_HEADERS!.valueFrom.secretKeyRef).toEqual({ name: 's', key: 'api-key' });
  });

  it.each([
    [0, '0'],
    [1, '1'],
    [0.125, '0.125'],
    ['0.5', '0.5'],
  ])('passes the ratio %j on as %j', async (samplerArg, value) => {
    const env = envOf(proxyOf(await render({ ...STANDALONE, tracing: { endpoint: 'https://otel.example.com', samplerArg } })));
    expect(env.OTEL_TRACES_SAMPLER_ARG!.value).toBe(value);
  });

  it("renders operations.md's example (Traces) into the collector, the sampler and the headers from the Secret it names", async () => {
    const traces = section(readDoc('docs/operations.md'), 'Traces');
    const block = /```yaml\n(tracing:\n[\s\S]*?)```/.exec(traces)![1]!;
    const env = envOf(proxyOf(await render({ ...STANDALONE, ...(parseYaml(block) as Record<string, unknown>) })));
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT!.value).toBe('https://otel-collector.observability:4318');
    expect(env.OTEL_TRACES_SAMPLER!.value).toBe('parentbased_traceidratio');
    expect(env.OTEL_TRACES_SAMPLER_ARG!.value).toBe('0.05');
    expect(env.OTEL_EXPORTER_OTLP_HEADERS!.valueFrom.secretKeyRef).toEqual({ name: 'otlp-credentials', key: 'otlp-headers' });
    // The command beside it makes the Secret the values name, with the key they read.
    expect(traces).toContain('kubectl create secret generic otlp-credentials --from-file=otlp-headers=');
  });

  describe('as a sidecar in a parent chart', () => {
    let parent: string;
    beforeAll(async () => {
      parent = await buildParentChart(work);
    });

    it.each([
      ['native', true, 'initContainers'],
      ['classic', false, 'containers'],
    ])('gives the %s sidecar the same tracing settings', async (_form, native, list) => {
      const objects = await render({ 'ticket-auth-proxy': { tracing: TRACING, sidecar: { native } } }, parent);
      const sidecar = findKind(objects, 'Deployment')!.spec.template.spec[list].find((c: Obj) => c.name === 'ticket-auth-proxy');
      const env = envOf(sidecar);
      expect(Object.fromEntries(tracingVars(env).map((name) => [name, env[name]]))).toEqual(TRACING_ENV);
    });
  });
});
