/**
 * What a newcomer renders first, by a real helm: output a reader can follow (no blank lines, no
 * key left empty), the sidecar on its own without a parent chart
 * (examples/helm/sidecar-preview-values.yaml), the values for an image built here and loaded into
 * a local cluster (examples/helm/local-image-values.yaml), and the parent chart example, whose
 * rendering leaves the repository clean.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { helm } from './helm-binary.js';
import { envOf, findKind, type Obj, parseObjects, validateObject } from './k8s-objects.js';
import { buildParentChart } from './parent-chart.js';

const root = join(import.meta.dirname, '..', '..');
const chart = join(root, 'helm', 'ticket-auth-proxy');
const examples = join(root, 'examples', 'helm');
const appVersion = /appVersion: "([^"]+)"/.exec(readFileSync(join(chart, 'Chart.yaml'), 'utf8'))![1]!;
const ciValues = readdirSync(join(chart, 'ci')).filter((f) => f.endsWith('-values.yaml'));

const work = mkdtempSync(join(tmpdir(), 'tap-helm-examples-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let parent: string;
beforeAll(async () => {
  parent = await buildParentChart(work);
});

async function template(chartDir: string, args: string[]): Promise<string> {
  const result = await helm(['template', 'tickets', chartDir, ...args]);
  if (result.code !== 0) throw new Error(`helm template ${args.join(' ')} failed:\n${result.stderr}`);
  return result.stdout;
}

/** The paths of the keys whose value is empty (`annotations:` and nothing under it). */
function emptyKeys(value: unknown, path = ''): string[] {
  if (value === null) return [path];
  if (typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, child]) => emptyKeys(child, `${path}/${key}`));
}

/** Rendered manifests as a reader wants them: no blank line, no key left without a value. */
function expectTidy(text: string): void {
  const blank = text
    .split('\n')
    .slice(0, -1)
    .flatMap((line, i) => (line.trim() === '' ? [i + 1] : []));
  expect(blank, 'blank lines (by number)').toEqual([]);
  for (const doc of parseAllDocuments(text)) expect(emptyKeys(doc.toJS())).toEqual([]);
}

describe('the rendered manifests', () => {
  it.each(ciValues)('read cleanly with ci/%s', async (file) => {
    expectTidy(await template(chart, ['-f', join(chart, 'ci', file)]));
  });

  it.each([
    ['an existing Secret', {}],
    [
      'a created Secret, the CA, a client certificate, an egress proxy and DPoP',
      {
        existingSecret: '',
        createSecret: true,
        clientId: 'app',
        clientSecret: 's',
        'tls.caSecret': 'corp-ca',
        'tls.clientCertSecret': 'client-tls',
        'egressProxy.httpsProxy': 'http://proxy.corp:3128',
        'dpop.mode': 'on',
        'dpop.existingSecret': 'dpop-key',
      },
    ],
    [
      'the classic sidecar in secretless mode',
      {
        'sidecar.native': false,
        existingSecret: '',
        clientId: 'app',
        'auth.serviceAccountToken.enabled': true,
        'auth.serviceAccountToken.audience': 'api://idp',
      },
    ],
  ])('read cleanly through the parent chart example, with %s', async (_name, values) => {
    const args = Object.entries(values).flatMap(([key, value]) => ['--set', `ticket-auth-proxy.${key}=${String(value)}`]);
    expectTidy(await template(parent, args));
  });
});

describe('the parent chart example', () => {
  it('points the app at the sidecar on the listener port the values give it', async () => {
    const pod: Obj = findKind(parseObjects(await template(parent, ['--set', 'ticket-auth-proxy.listenPort=9180'])), 'Deployment')!.spec
      .template.spec;
    const sidecar = pod.initContainers.find((c: Obj) => c.name === 'ticket-auth-proxy');
    expect(envOf(sidecar).LISTEN_PORT.value).toBe('9180');
    expect(envOf(pod.containers[0]).TICKETS_BASE_URL.value).toBe('http://127.0.0.1:9180');
  });

  it('leaves nothing for git to list once its dependency is built (Chart.lock and charts/ are ignored)', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : [join(dir, name)]));
    const tracked = new Set(files(join(root, 'examples', 'parent-chart')).map((f) => relative(join(root, 'examples'), f)));
    const built = files(parent)
      .map((f) => relative(join(work, 'examples'), f))
      .filter((f) => !tracked.has(f));
    expect(built).toEqual(expect.arrayContaining(['parent-chart/Chart.lock', expect.stringMatching(/^parent-chart\/charts\//)]));
    const paths = built.map((f) => `examples/${f}`);
    const ignored = execFileSync('git', ['check-ignore', '--no-index', ...paths], { cwd: root, encoding: 'utf8' });
    expect(ignored.trim().split('\n').sort()).toEqual(paths.sort());
  });
});

describe('examples/helm/sidecar-preview-values.yaml', () => {
  const preview = join(examples, 'sidecar-preview-values.yaml');

  it('passes helm lint --strict', async () => {
    const result = await helm(['lint', '--strict', chart, '-f', preview]);
    expect(result.stdout).toContain('0 chart(s) failed');
    expect(result.code).toBe(0);
  });

  it.each([
    ['native', [], [], 'initContainers'],
    ['classic', ['--set', 'sidecar.native=false'], ['--set', 'ticket-auth-proxy.sidecar.native=false'], 'containers'],
  ])('shows the %s sidecar on its own, exactly as the parent chart example puts it into its pod', async (_form, args, parentArgs, list) => {
    const objects = parseObjects(await template(chart, ['-f', preview, ...args]));
    expect(objects.map((o) => o.kind)).toEqual(['Pod']);
    for (const o of objects) validateObject(o);
    const pod: Obj = objects[0]!.spec;
    const sidecar = pod[list].find((c: Obj) => c.name === 'ticket-auth-proxy');
    // The example's values and the preview's name the same gateway and Secret.
    const inParent: Obj = findKind(parseObjects(await template(parent, parentArgs)), 'Deployment')!.spec.template.spec;
    expect(sidecar).toEqual(inParent[list].find((c: Obj) => c.name === 'ticket-auth-proxy'));
    expect(pod.volumes).toEqual(inParent.volumes);
    expect(envOf(pod.containers.find((c: Obj) => c.name === 'app')).TICKETS_BASE_URL.value).toBe('http://127.0.0.1:8180');
  });

  it('renders no Pod outside sidecar mode', async () => {
    const objects = parseObjects(await template(chart, ['-f', preview, '--set', 'mode=standalone']));
    expect(objects.map((o) => o.kind)).not.toContain('Pod');
    expect(objects.map((o) => o.kind)).toContain('Deployment');
  });
});

describe('examples/helm/local-image-values.yaml', () => {
  const local = join(examples, 'local-image-values.yaml');
  const first = ['-f', local, '--set', 'baseUrl=https://tickets.example.com', '--set', 'existingSecret=ticket-service-credentials'];

  it('runs the tag built and loaded into the cluster, and never pulls it', async () => {
    const objects = parseObjects(await template(chart, first));
    for (const o of objects) validateObject(o);
    const container: Obj = findKind(objects, 'Deployment')!.spec.template.spec.containers[0];
    expect(container.image).toBe(`ticket-auth-proxy:${appVersion}`);
    expect(container.imagePullPolicy).toBe('Never');
    // The commands in the file's comment build and load that very tag.
    const text = readFileSync(local, 'utf8');
    expect(text).toContain(`docker build -t ticket-auth-proxy:${appVersion} .`);
    expect(text).toContain(`kind load docker-image ticket-auth-proxy:${appVersion}`);
    expect(text).toContain(`minikube image load ticket-auth-proxy:${appVersion}`);
  });

  it('passes helm lint --strict with the values its comment sets', async () => {
    const result = await helm(['lint', '--strict', chart, ...first]);
    expect(result.stdout).toContain('0 chart(s) failed');
    expect(result.code).toBe(0);
  });
});
