// The candidates a scenario sets side by side, each a process of its own started for the scenario:
// the product, started as a user starts it; the build it is compared with (BENCH_BEFORE); the
// product with the scenario's feature off (`bearer` in the DPoP scenarios, `tcp` in the socket
// one, `untraced` in the tracing one); and two baselines
// written with Node's usual tools (bench/baselines/). bench/README.md describes each.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, root } from '../processes.js';
import { pollOk } from './children.js';

export const PRODUCT = 'ticket-auth-proxy';
export const BEFORE = 'before';
export const BEARER = 'bearer';
export const TCP = 'tcp';
export const UNTRACED = 'untraced';
export const ONE_ROUTE = 'one-route';
export const MINIMAL = 'undici-minimal';
export const HTTP_PROXY = 'http-proxy';

/** The secret of every build's client at the mock token endpoint. */
export const CLIENT_SECRET = 'bench-secret';

/**
 * The product's builds. Each is its own client at the mock token endpoint, so that its token
 * fetches are counted apart. `feature`: whether the scenario's feature (DPoP) is on in it.
 */
const BUILDS = {
  [PRODUCT]: { clientId: 'bench-client', main: () => 'dist/main.js', feature: true },
  // Run exactly as the product is, with BENCH_BEFORE_ENV on top.
  [BEFORE]: { clientId: 'bench-before', main: (settings) => settings.beforeMain, env: (settings) => settings.beforeEnv, feature: true },
  // The product with the scenario's feature off, in the same rounds: the feature's cost with the
  // machine's drift taken out.
  [BEARER]: { clientId: 'bench-bearer', main: () => 'dist/main.js', feature: false },
  // The same on loopback TCP, beside the product on a Unix socket.
  [TCP]: { clientId: 'bench-tcp', main: () => 'dist/main.js', feature: false },
  // With tracing off, beside the product tracing every request.
  [UNTRACED]: { clientId: 'bench-untraced', main: () => 'dist/main.js', feature: false },
  // Without routes in a file, beside the product choosing among mounted routes.
  [ONE_ROUTE]: { clientId: 'bench-one-route', main: () => 'dist/main.js', feature: false },
};

/** The token every baseline sends: they hold a static Bearer, no token lifecycle. */
const STATIC_TOKEN = 'bench-static-token';

/** The baselines: `trust` is how one trusts the CA of an HTTPS upstream. */
const BASELINES = {
  // undici's Pool.stream with a static Bearer, about 25 lines: the floor for a proxy in Node.
  [MINIMAL]: { script: 'bench/baselines/undici-minimal.js', trust: (caFile) => ({ NODE_EXTRA_CA_CERTS: caFile }) },
  // http-proxy with a keep-alive agent: what most Node projects reach for.
  [HTTP_PROXY]: { script: 'bench/baselines/http-proxy.js' },
};

/** The order in which candidates are started, listed and run in a scenario's first round. */
const ORDER = [MINIMAL, HTTP_PROXY, PRODUCT, BEFORE, BEARER, TCP, UNTRACED, ONE_ROUTE];

/** The client ids the mock token endpoint must know, each with CLIENT_SECRET. */
export function clientIds() {
  return Object.values(BUILDS).map((build) => build.clientId);
}

/** The candidates of a scenario, in ORDER: the product, and those it is set against that this run has. */
function candidateNames(scenario, settings) {
  return ORDER.filter((name) => name === PRODUCT || (scenario.against.includes(name) && (name !== BEFORE || settings.beforeMain)));
}

/**
 * What the scenario's feature sets in the product: DPOP=on, and DPOP_ALG unless it is the default
 * key (ES256); tracing of every request, exported to the run's collector.
 */
function featureEnv(scenario, collector) {
  if (scenario.tracing) return { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_TRACES_SAMPLER: 'always_on' };
  if (scenario.dpop === undefined) return {};
  return { DPOP: 'on', ...(scenario.dpop === 'ES256' ? {} : { DPOP_ALG: scenario.dpop }) };
}

/**
 * A configuration file of `count` routes, each mounted on the main listener (`/r0` ... ), all to
 * the upstream with the build's credential: the requests go to the last mount, so every mount is
 * passed over before it is found (docs/routes.md).
 */
function routesFile(count, { workDir, name, upstream, tokenService, clientId, secretFile }) {
  const file = join(workDir, `${name}-routes.yaml`);
  const routes = Array.from({ length: count }, (_, i) =>
    [`  - name: r${i}`, `    mount: /r${i}`, `    baseUrl: ${upstream.origin}`].join('\n'),
  );
  writeFileSync(
    file,
    [
      `tokenUrl: ${tokenService.url}/api/v1/oauth2/token`,
      `clientId: ${clientId}`,
      `clientSecretFile: ${secretFile}`,
      'routes:',
      ...routes,
      '',
    ].join('\n'),
  );
  return { env: { CONFIG_FILE: file }, prefix: `/r${count - 1}` };
}

/** What the scenario's traffic needs of every build: the HTTPS upstream's CA, credentials read from each request. */
function trafficEnv(scenario, upstream) {
  return { ...(upstream.caFile ? { CA_FILE: upstream.caFile } : {}), ...(scenario.basic ? { PASSTHROUGH_BASIC: 'true' } : {}) };
}

/**
 * Starts the scenario's candidates and resolves them once each is ready: `{ name, url, socketPath?,
 * pid, child, output(), tokenFetches?(), adminUrl? }`, tokenFetches counting the build's token
 * requests from now on; `socketPath` where the candidate listens on a Unix socket (`url` then
 * names no port); `adminUrl` a build's admin listener.
 *
 * @param scenario an entry of SCENARIOS with its name
 * @param run `{ settings, children, upstream: { origin, caFile? }, tokenService, secretFile, workDir, collector? }`,
 *   `collector` the OTLP receiver of a tracing scenario (collector.js)
 */
export async function startCandidates(scenario, { settings, children, upstream, tokenService, secretFile, workDir, collector }) {
  const fetchesFrom = tokenService.tokenRequests.length;
  // BENCH_PROFILE=1: each candidate writes a CPU profile to bench/results/profiles/<name>/.
  const profileFlags = (name) => (settings.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(root, 'bench/results/profiles', name)}`] : []);

  async function startBuild(name) {
    const build = BUILDS[name];
    const socketPath = build.feature && scenario.socket ? join(workDir, `${name}.sock`) : undefined;
    const port = socketPath === undefined ? await freePort() : undefined;
    const admin = await freePort();
    const routed =
      build.feature && scenario.routes !== undefined
        ? routesFile(scenario.routes, { workDir, name, upstream, tokenService, clientId: build.clientId, secretFile })
        : { env: {}, prefix: '' };
    const candidate = await children.startNode(name, [...profileFlags(name), build.main(settings)], {
      env: {
        BASE_URL: upstream.origin,
        TOKEN_URL: `${tokenService.url}/api/v1/oauth2/token`,
        CLIENT_ID: build.clientId,
        CLIENT_SECRET_FILE: secretFile,
        ...(socketPath === undefined ? { LISTEN_PORT: String(port) } : { LISTEN_SOCKET: socketPath }),
        ADMIN_PORT: String(admin),
        LOG_LEVEL: 'info',
        NODE_OPTIONS: settings.productNodeOptions,
        ...settings.productAllocator.env,
        ...trafficEnv(scenario, upstream),
        ...(build.feature ? featureEnv(scenario, collector) : {}),
        ...routed.env,
        ...build.env?.(settings),
      },
      ready: () => pollOk(`http://127.0.0.1:${admin}/readyz`),
    });
    const tokenFetches = () => tokenService.tokenRequests.slice(fetchesFrom).filter((r) => r.clientId === build.clientId).length;
    const url = `${socketPath === undefined ? `http://127.0.0.1:${port}` : 'http://localhost'}${routed.prefix}`;
    return { ...candidate, url, socketPath, tokenFetches, adminUrl: `http://127.0.0.1:${admin}` };
  }

  async function startBaseline(name) {
    const baseline = BASELINES[name];
    const port = await freePort();
    const trust = upstream.caFile ? baseline.trust?.(upstream.caFile) : {};
    if (trust === undefined) throw new Error(`${name} cannot trust an HTTPS upstream's CA: leave it out of ${scenario.name}`);
    const args = [...profileFlags(name), baseline.script, upstream.origin, String(port), STATIC_TOKEN];
    const candidate = await children.startNode(name, args, { env: trust });
    return { ...candidate, url: `http://127.0.0.1:${port}` };
  }

  return Promise.all(candidateNames(scenario, settings).map((name) => (BUILDS[name] ? startBuild(name) : startBaseline(name))));
}
