/**
 * The examples of the README and of docs/ (marked `<!-- example: NAME -->`): each is a file the
 * other packaging tests render or parse, or a command run here as far as this machine can (no
 * Docker engine, no cluster). And the README's Quick start, as a newcomer follows it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ROUTE_CHECKS, SETTINGS_CHECKS } from '../../src/app/settings-checks.js';
import { loadConfig } from '../../src/config/load.js';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { examples, readDoc, ROOT as root, section } from '../helpers/docs.js';
import { pollUntil, startProxy } from '../helpers/index.js';
import { filesOf } from '../helpers/load-settings.js';
import { helm } from './helm-binary.js';
import { envOf, findKind, KNOWN_ENV, type Obj, parseObjects, validateObject } from './k8s-objects.js';

const readme = readDoc('README.md');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

/** A shell command's words: continuation lines joined, quotes removed (no expansions). */
function words(command: string): string[] {
  const joined = command.replace(/\\\n/g, ' ');
  return [...joined.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** The values of each occurrence of a flag (`-e X`, `--set X`). */
function flagValues(argv: string[], ...names: string[]): string[] {
  return argv.flatMap((w, i) => (names.includes(w) && argv[i + 1] !== undefined ? [argv[i + 1]!] : []));
}

const marked = examples();
const blocks = new Map([...marked].map(([name, { body }]) => [name, body]));
/** The page an example is in. */
const pageOf = (name: string): string => readDoc(marked.get(name)!.page);

describe('the examples', () => {
  it('are the Docker, Compose, Helm standalone, Helm sidecar, kubectl, DPoP values, routes and chart routes examples', () => {
    expect([...blocks.keys()].sort()).toEqual(
      [
        'docker-run',
        'examples/docker/compose.yaml',
        'examples/kubernetes/native-sidecar.yaml',
        'examples/parent-chart/templates/deployment.yaml',
        'examples/parent-chart/values.yaml',
        'examples/helm/sidecar-preview-values.yaml',
        'examples/helm/routes-values.yaml',
        'examples/routes/proxy.yaml',
        'helm-standalone',
        'helm-dpop-values',
        'local-cluster',
      ].sort(),
    );
  });

  it.each([...blocks.keys()].filter((name) => name.startsWith('examples/')))('shows %s exactly as the file is', (name) => {
    expect(blocks.get(name)).toBe(readFileSync(join(root, name), 'utf8'));
  });

  it('reads the routes example as the proxy does: one route mounted, one on its socket, the defaults inherited', () => {
    const values = parseYaml(blocks.get('examples/routes/proxy.yaml')!) as Record<string, unknown>;
    const secrets = filesOf({ '/run/secrets/eu/client-secret': 'eu\n', '/run/secrets/us/client-secret': 'us\n' });
    const loaded = loadConfig({ env: {}, file: { path: 'proxy.yaml', values }, readFile: secrets }, SETTINGS_CHECKS, ROUTE_CHECKS);
    expect(loaded.routes.map((r) => [r.name, r.way.kind, r.paths, r.config.tokenScope, r.config.upstreamTimeoutMs])).toEqual([
      ['eu', 'mount', ['/api/v1'], 'tickets.read', 15000],
      ['us', 'socket', ['/api/v1', '/api/v2'], 'tickets.read', 15000],
    ]);
  });

  it('runs docker with the port on host loopback, a read-only root, no capabilities and the secret from a file', () => {
    const argv = words(blocks.get('docker-run')!);
    expect(argv.slice(0, 2)).toEqual(['docker', 'run']);
    expect(flagValues(argv, '-p')).toEqual(['127.0.0.1:8180:8180', '127.0.0.1:8181:8181']);
    for (const flag of ['--read-only', '--cap-drop', '--security-opt']) expect(argv).toContain(flag);
    expect(flagValues(argv, '--user')).toEqual(['65532:65532']);
    const env = Object.fromEntries(flagValues(argv, '-e').map((kv) => kv.split('=', 2) as [string, string]));
    for (const name of Object.keys(env)) expect(KNOWN_ENV).toContain(name);
    expect(env.LISTEN_HOST).toBe('0.0.0.0');
    expect(env.CLIENT_SECRET).toBeUndefined();
    const [, target, mode] = flagValues(argv, '-v')[0]!.split(':');
    expect(target).toBe(env.CLIENT_SECRET_FILE);
    expect(mode).toBe('ro');
    expect(argv.at(-1)).toBe(`registry.example.com/platform/ticket-auth-proxy:${version}`);
    expect(pageOf('docker-run')).toContain(`docker build -t registry.example.com/platform/ticket-auth-proxy:${version} .`);
  });

  it('installs the standalone chart with a command helm renders into valid objects', async () => {
    const argv = words(blocks.get('helm-standalone')!);
    expect(argv.slice(0, 2)).toEqual(['helm', 'install']);
    const result = await helm(['template', ...argv.slice(2)], root);
    expect(result.stderr).toBe('');
    const objects = parseObjects(result.stdout);
    for (const o of objects) validateObject(o);
    const container: Obj = findKind(objects, 'Deployment')!.spec.template.spec.containers[0];
    expect(envOf(container).BASE_URL.value).toBe('https://tickets.example.com');
    expect(container.image).toBe(`registry.example.com/platform/ticket-auth-proxy:${version}`);
    expect(findKind(objects, 'NetworkPolicy')!.spec.ingress[0].from[0].podSelector.matchLabels).toEqual({ app: 'legacy-app' });
    expect(findKind(objects, 'Service')!.metadata.name).toBe('tickets-ticket-auth-proxy');
    expect(pageOf('helm-standalone')).toContain('http://tickets-ticket-auth-proxy.<namespace>.svc:8180');
  });
});

describe('the first try on a local cluster', () => {
  /** The block's commands, each as its words, comments dropped. */
  const commands = (): string[][] =>
    blocks
      .get('local-cluster')!
      .replace(/\\\n/g, ' ')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => words(line.replace(/\s+#.*$/, '')));
  const command = (...start: string[]): string[] => {
    const found = commands().find((argv) => start.every((w, i) => argv[i] === w));
    expect(found, start.join(' ')).toBeDefined();
    return found!;
  };

  it('builds one tag, loads it into kind (or minikube), and installs the chart to run it, never pulled', async () => {
    const tag = command('docker', 'build', '-t')[3]!;
    expect(tag).toBe(`ticket-auth-proxy:${version}`);
    expect(command('kind', 'load', 'docker-image')[3]).toBe(tag);
    expect(blocks.get('local-cluster')).toContain(`# minikube: minikube image load ${tag}\n`);
    const secret = command('kubectl', 'create', 'secret', 'generic')[4];

    const install = command('helm', 'install');
    const result = await helm(['template', ...install.slice(2)], root);
    expect(result.stderr).toBe('');
    const objects = parseObjects(result.stdout);
    for (const o of objects) validateObject(o);
    const deployment = findKind(objects, 'Deployment')!;
    const container: Obj = deployment.spec.template.spec.containers[0];
    expect(container.image).toBe(tag);
    expect(container.imagePullPolicy).toBe('Never');
    expect(envOf(container).CLIENT_ID.valueFrom.secretKeyRef.name).toBe(secret);

    // The rollout and the port-forward name the Deployment installed, and its proxy port.
    const name = `deployment/${deployment.metadata.name}`;
    expect(command('kubectl', 'rollout', 'status')[3]).toBe(name);
    const forward = command('kubectl', 'port-forward');
    expect(forward[2]).toBe(name);
    const port = container.ports.find((p: Obj) => p.name === 'proxy').containerPort;
    expect(forward[3]).toBe(`${port}:${port}`);
    expect(pageOf('local-cluster')).toContain(`curl -s http://127.0.0.1:${port}/api/v1/tickets`);
  });
});

describe('the DPoP example', () => {
  it('is Helm values the chart renders into DPOP=on and the key mounted from the Secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-readme-dpop-'));
    try {
      writeFileSync(join(dir, 'values.yaml'), blocks.get('helm-dpop-values')!);
      const result = await helm([
        'template',
        'rel',
        join(root, 'helm', 'ticket-auth-proxy'),
        '--set',
        'baseUrl=https://tickets.example.com',
        '--set',
        'existingSecret=creds',
        '-f',
        join(dir, 'values.yaml'),
      ]);
      expect(result.stderr).toBe('');
      const pod: Obj = findKind(parseObjects(result.stdout), 'Deployment')!.spec.template.spec;
      const env = envOf(pod.containers[0]);
      expect(env.DPOP.value).toBe('on');
      expect(env.DPOP_ALG).toBeUndefined();
      expect(env.DPOP_KEY_FILE.value).toMatch(/\/dpop-key\.pem$/);
      expect(pod.volumes).toContainEqual(
        expect.objectContaining({ secret: expect.objectContaining({ secretName: 'ticket-auth-proxy-dpop-key' }) }),
      );
      // The commands beside it make the Secret the values name, with the key they name.
      expect(pageOf('helm-dpop-values')).toContain('kubectl create secret generic ticket-auth-proxy-dpop-key --from-file=dpop-key.pem');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the Compose example', () => {
  const compose = parseYaml(readFileSync(join(root, 'examples/docker/compose.yaml'), 'utf8')) as Obj;
  const proxy: Obj = compose.services['ticket-auth-proxy'];
  const app: Obj = compose.services['legacy-app'];

  it('runs the proxy unprivileged, read-only, unpublished, with the secret from a Compose secret file', () => {
    expect(proxy).toMatchObject({ user: '65532:65532', read_only: true, cap_drop: ['ALL'], security_opt: ['no-new-privileges:true'] });
    expect(proxy.ports).toBeUndefined();
    for (const name of Object.keys(proxy.environment)) expect(KNOWN_ENV).toContain(name);
    expect(proxy.environment.CLIENT_SECRET).toBeUndefined();
    expect(proxy.environment.LISTEN_HOST, 'the proxy stays on loopback').toBeUndefined();
    const [secret] = proxy.secrets as string[];
    expect(proxy.environment.CLIENT_SECRET_FILE).toBe(`/run/secrets/${secret}`);
    expect(compose.secrets[secret!].file).toBeTypeOf('string');
  });

  it("puts the app in the proxy's network namespace, started once the proxy is healthy", () => {
    expect(app.network_mode).toBe('service:ticket-auth-proxy');
    expect(app.depends_on['ticket-auth-proxy'].condition).toBe('service_healthy');
    expect(app.environment.TICKETS_BASE_URL).toBe('http://127.0.0.1:8180');
  });

  describe('its healthcheck command, run against the real proxy', () => {
    let gateway: MockTicketService;
    beforeAll(async () => {
      gateway = await createMockTicketService({ clients: { client: 'compose-secret' }, tokenTtlS: 900 });
    });
    afterAll(async () => {
      await gateway?.close();
    });

    /** Runs the healthcheck's argv with the admin port swapped for `port`; resolves the exit code. */
    function healthcheck(port: number): Promise<number | null> {
      const [kind, command, ...args] = proxy.healthcheck.test as string[];
      expect(kind).toBe('CMD');
      // The image's node: the distroless base's, on no PATH (the image has no shell to find one).
      expect(command).toBe('/nodejs/bin/node');
      const child = spawn(
        process.execPath,
        args.map((a) => a.replace('127.0.0.1:8181', `127.0.0.1:${port}`)),
        { stdio: 'ignore' },
      );
      return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    }

    it('exits 0 once the proxy holds a token, and non-zero when nothing answers', async () => {
      const proxyProcess = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: 'compose-secret' });
      try {
        await pollUntil(async () => (await healthcheck(proxyProcess.adminPort)) === 0, { timeoutMs: 10_000 });
      } finally {
        await proxyProcess.stop();
      }
      expect(await healthcheck(proxyProcess.adminPort)).not.toBe(0);
    });

    it('exits non-zero while the proxy has no token', async () => {
      gateway.setTokenFault({ status: 401, body: { error: 'invalid_client' }, times: Infinity });
      const proxyProcess = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: 'compose-secret' });
      try {
        await pollUntil(() => gateway.tokenRequests.length > 0, { timeoutMs: 10_000 });
        expect(await healthcheck(proxyProcess.adminPort)).toBe(1);
      } finally {
        gateway.clearTokenFaults();
        await proxyProcess.stop();
      }
    });
  });
});

/** The placeholder of the examples: `.invalid` never resolves (RFC 2606), so a pull fails at once. */
const PLACEHOLDER = 'registry.example.invalid/ticket-auth-proxy';

/** The comment lines a file starts with. */
const headComments = (text: string): string => text.slice(0, text.search(/^[^#]/m));

describe('the images the examples run (a placeholder that never resolves)', () => {
  it('the Compose file builds the proxy from the repository root and tags it', () => {
    const compose = parseYaml(readFileSync(join(root, 'examples/docker/compose.yaml'), 'utf8')) as Obj;
    const proxy: Obj = compose.services['ticket-auth-proxy'];
    const context = resolve(root, 'examples/docker', proxy.build.context as string);
    expect(context).toBe(root);
    expect(existsSync(join(context, proxy.build.dockerfile ?? 'Dockerfile'))).toBe(true);
    expect(proxy.image).toBe('ticket-auth-proxy:local');
  });

  it.each(['examples/kubernetes/native-sidecar.yaml', 'examples/parent-chart/values.yaml'])(
    '%s says first which image to build and push, and names a placeholder that never resolves',
    (file) => {
      const text = readFileSync(join(root, file), 'utf8');
      const head = headComments(text);
      expect(head).toContain('No image');
      expect(head).toContain(`docker build -t <your-registry>/ticket-auth-proxy:${version} .`);
      expect(head).toContain(`docker push <your-registry>/ticket-auth-proxy:${version}`);
      expect(head).toContain('registry.example.invalid');
    },
  );

  it('the plain manifest runs the placeholder image', () => {
    const [deployment] = parseObjects(readFileSync(join(root, 'examples/kubernetes/native-sidecar.yaml'), 'utf8'));
    const images = [...deployment!.spec.template.spec.initContainers, ...deployment!.spec.template.spec.containers].map(
      (c: Obj) => c.image as string,
    );
    expect(images).toContain(`${PLACEHOLDER}:${version}`);
    for (const image of images) expect(image).not.toMatch(/^ghcr\.io\//);
  });

  it('the parent chart and the chart itself render the placeholder image by default', async () => {
    const values = parseYaml(readFileSync(join(root, 'examples/parent-chart/values.yaml'), 'utf8')) as Obj;
    expect(values['ticket-auth-proxy'].image.repository).toBe(PLACEHOLDER);
    const result = await helm([
      'template',
      'rel',
      join(root, 'helm/ticket-auth-proxy'),
      '--set',
      'baseUrl=https://tickets.example.com',
      '--set',
      'existingSecret=creds',
    ]);
    expect(result.stderr).toBe('');
    const container: Obj = findKind(parseObjects(result.stdout), 'Deployment')!.spec.template.spec.containers[0];
    expect(container.image).toBe(`${PLACEHOLDER}:${version}`);
    expect(readDoc('docs/deployment.md')).toContain(`\`${PLACEHOLDER}\`, a placeholder that never resolves`);
  });
});

describe('README Quick start', () => {
  const quickStart = section(readme, 'Quick start');

  it("says how to get Node.js 22: a version manager, or the npm registry's node package as .ci/run does", () => {
    expect(quickStart).toMatch(/Node\.js 22 or newer/);
    expect(quickStart).toMatch(/`nvm install 22`/);
    const recipe = /`(npm install --prefix (\S+) node@22) && export PATH=(\S+):\$PATH`/.exec(quickStart);
    expect(recipe, 'the npm registry recipe').not.toBeNull();
    // The package puts node where .ci/run puts it on PATH.
    expect(recipe![3]).toBe(`${recipe![2]}/node_modules/node/bin`);
    expect(readFileSync(join(root, '.ci', 'run'), 'utf8')).toContain('/node_modules/node/bin:$PATH');
  });

  it("names as tested the Nodes CI runs the suite on: engines' lowest major and the image's, which .ci/run reads from there", () => {
    const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    const lowest = /^>=\s*(\d+)$/.exec(engines)?.[1];
    expect(lowest, `engines.node ${engines}`).toBeDefined();
    const image = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))?.[1];
    expect(image).toBeDefined();
    expect(quickStart).toContain(`Node.js ${lowest} or newer`);
    expect(quickStart).toContain(`node@${lowest}`);
    expect(quickStart).toContain(`the test suite runs on Node ${lowest} and Node ${image}`);
    const ci = readFileSync(join(root, '.ci', 'run'), 'utf8');
    // .ci/run reads both majors where this test does.
    expect(ci).toContain(`sed -n 's/.*"node": *">= *`);
    expect(ci).toContain('s/^ARG NODE_IMAGE=node:');
    expect(section(readDoc('docs/development.md'), 'CI').replace(/\s+/g, ' ')).toContain(
      `once on Node ${lowest} and once on Node ${image}, each at the exact version \`.ci/node-versions\` pins`,
    );
  });

  it('takes a newcomer from clone to a ticket list with two commands', () => {
    const first = /```sh\n([\s\S]*?)```/.exec(quickStart)![1]!;
    const commands = first
      .split('\n')
      .map((l) => l.replace(/#.*$/, '').trim())
      .filter(Boolean);
    expect(commands).toEqual(['npm ci && npm run demo', 'npm test']);
    expect(quickStart).toContain('curl -s http://127.0.0.1:8180/api/v1/tickets');
  });
});
