// The pods the pod check plays: the chart rendered by helm template in its four forms, and what
// stands in for what podman 4.3's kube play cannot play as rendered. Every stand-in is named in
// `standIns`, which the check prints; the rendered securityContext of every container and of the
// pod is never touched.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { GATEWAY } from './in-pod.mjs';
import { IMAGE_NODE } from './podman.mjs';

/**
 * The routes form's gateways (docs/routes.md): two mocks of the Ticket Service on the pod's
 * loopback, each its own identity provider under a path prefix of its own, each knowing only its
 * route's client, whose secret is in a Secret of its own.
 */
export const GATEWAYS = [
  { route: 'eu', port: 8081, prefix: '/eu-gw', clientId: 'eu-app', clientSecret: 'eu-secret', secret: 'eu-credentials' },
  { route: 'us', port: 8082, prefix: '/us-gw', clientId: 'us-app', clientSecret: 'us-secret', secret: 'us-credentials' },
];

/**
 * The four forms: the parent chart's pod with the sidecar on TCP and on a socket, the standalone
 * Deployment, and the parent chart's pod with two routes, one mounted on the main listener (TCP),
 * one on a socket of its own on the volume the app mounts, without a top-level gateway or Secret.
 */
export const FORMS = [
  { name: 'sidecar-tcp', chart: 'parent', set: [] },
  { name: 'sidecar-socket', chart: 'parent', set: ['ticket-auth-proxy.listenSocket=/var/run/ticket-auth-proxy/proxy.sock'] },
  { name: 'standalone', chart: 'standalone', set: [] },
  {
    name: 'sidecar-routes',
    chart: 'parent',
    set: ['ticket-auth-proxy.baseUrl=', 'ticket-auth-proxy.existingSecret='],
    values: {
      'ticket-auth-proxy': {
        routes: [
          { name: 'eu', mount: '/eu', ...gatewayOf('eu') },
          { name: 'us', listenSocket: '/var/run/ticket-auth-proxy/us.sock', ...gatewayOf('us') },
        ],
      },
    },
    gateways: GATEWAYS,
  },
];

/** A route's gateway, client and Secret, as its chart values. */
function gatewayOf(route) {
  const g = GATEWAYS.find((x) => x.route === route);
  return { baseUrl: `http://127.0.0.1:${g.port}${g.prefix}`, clientId: g.clientId, existingSecret: g.secret };
}

/** The Ticket Service mock, a container of the same pod: the proxy's image, `node dist/mock/main.js`. */
export const MOCK = { port: 8080, clientId: 'demo-client', clientSecret: 'demo-secret' };
/** The proxy's container, as the chart names it. */
export const PROXY = 'ticket-auth-proxy';
/** The credentials' Secret, as the values below name it. */
export const SECRET = 'ticket-service-credentials';
/** The suffix of the second podman secret, in the form the env var reads (see `secrets`). */
export const ENV_SECRET_SUFFIX = '-env';

// A container that idles until SIGTERM, in node: the image has no shell and no sleep.
const IDLE = [IMAGE_NODE, '-e', 'process.on("SIGTERM", () => process.exit(0)); setInterval(() => {}, 1 << 30)'];

/**
 * Renders `form` with helm (the parent chart example, its dependency vendored in a copy of the
 * two charts, or the chart alone); the image is `image`, the gateway the mock on the pod's
 * loopback. Returns the rendered objects.
 */
export function render(form, { root, helm, image }) {
  const [repository, tag] = image.split(/:(?=[^:/]+$)/);
  const base = [`baseUrl=http://127.0.0.1:${MOCK.port}`, `image.repository=${repository}`, `image.tag=${tag}`, 'image.pullPolicy=Never'];
  let chart;
  let set;
  if (form.chart === 'parent') {
    const copy = mkdtempSync('/tmp/pod-check-chart.');
    cpSync(join(root, 'examples', 'parent-chart'), join(copy, 'examples', 'parent-chart'), { recursive: true });
    cpSync(join(root, 'helm', 'ticket-auth-proxy'), join(copy, 'helm', 'ticket-auth-proxy'), { recursive: true });
    chart = join(copy, 'examples', 'parent-chart');
    execFileSync(helm, ['dependency', 'build', chart], { stdio: 'ignore' });
    set = [...base.map((s) => `ticket-auth-proxy.${s}`), `image=${image}`, ...form.set];
  } else {
    chart = join(root, 'helm', 'ticket-auth-proxy');
    set = [...base, ...form.set];
  }
  const args = ['template', 'check', chart, ...(form.chart === 'standalone' ? ['-f', join(chart, 'ci', 'standalone-values.yaml')] : [])];
  const valuesDir = form.values === undefined ? undefined : mkdtempSync('/tmp/pod-check-values.');
  if (valuesDir !== undefined) {
    writeFileSync(join(valuesDir, 'values.json'), JSON.stringify(form.values));
    args.push('-f', join(valuesDir, 'values.json'));
  }
  let out;
  try {
    out = execFileSync(helm, [...args, ...set.flatMap((s) => ['--set', s])], { encoding: 'utf8' });
  } finally {
    if (form.chart === 'parent') rmSync(join(chart, '..', '..'), { recursive: true, force: true });
    if (valuesDir !== undefined) rmSync(valuesDir, { recursive: true, force: true });
  }
  // YAML 1.1, as Kubernetes reads it: defaultMode 0444 is octal there.
  return parseAllDocuments(out, { version: '1.1' })
    .map((d) => d.toJS())
    .filter((o) => o !== null);
}

/**
 * What the check plays for `form`: the rendered Deployment with the stand-ins kube play needs, a
 * mock container, an app container (the parent chart's own, given a command; in the standalone
 * form one added, as the caller a Service would route), and an intruder: a container of the same
 * pod that mounts nothing. Returns the Deployment to play, what the chart's probes ask, the pod's
 * fsGroup and grace period, the socket's path (socket form), and the stand-ins made.
 */
export function podToPlay(objects, form, image) {
  const rendered = objects.find((o) => o.kind === 'Deployment');
  if (rendered === undefined) throw new Error(`${form.name}: helm template rendered no Deployment`);
  const deployment = copy(rendered);
  const spec = deployment.spec.template.spec;
  const standIns = [];

  // 1. A native sidecar: an init container that restarts always.
  let proxy = (spec.initContainers ?? []).find((c) => c.name === PROXY);
  if (proxy !== undefined) {
    spec.initContainers = spec.initContainers.filter((c) => c !== proxy);
    if (spec.initContainers.length === 0) delete spec.initContainers;
    delete proxy.restartPolicy;
    spec.containers.unshift(proxy);
    standIns.push(
      'the native sidecar (an init container with restartPolicy: Always): kube play refuses probes on an init container, ' +
        'so the proxy runs as the first regular container',
    );
  } else {
    proxy = spec.containers.find((c) => c.name === PROXY);
  }
  if (proxy === undefined) throw new Error(`${form.name}: no container named ${PROXY}`);

  // 2. Probes: kube play makes each a health check that runs curl in the container.
  const ports = Object.fromEntries((proxy.ports ?? []).map((p) => [p.name, p.containerPort]));
  const probes = {};
  for (const kind of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    const probe = proxy[kind];
    if (probe === undefined) continue;
    const port = typeof probe.httpGet.port === 'string' ? ports[probe.httpGet.port] : probe.httpGet.port;
    probes[kind] = { path: probe.httpGet.path, port };
    delete proxy[kind];
  }
  standIns.push(
    'the probes: kube play turns them into health checks that run curl inside the image, which has none; ' +
      "the check calls each probe's endpoint from the pod's network namespace, as the kubelet calls it from the node",
  );

  // 3. Ports, refused under --network none; the containers share the pod's loopback all the same.
  for (const c of spec.containers) delete c.ports;
  standIns.push('the containerPorts: kube play refuses them under --network none (the pod has its loopback alone)');

  // 4. The credentials' Secret.
  for (const v of spec.volumes ?? []) {
    if (v.secret !== undefined && v.secret.optional === undefined) v.secret.optional = false;
  }
  standIns.push("the Secret volume's optional: false, Kubernetes' default, written out: kube play 4.3 panics without it");
  for (const c of spec.containers) {
    for (const e of c.env ?? []) {
      if (e.valueFrom?.secretKeyRef?.name === SECRET) e.valueFrom.secretKeyRef.name = `${SECRET}${ENV_SECRET_SUFFIX}`;
    }
  }
  const secretNames = (spec.volumes ?? []).flatMap((v) => (v.secret === undefined ? [] : [v.secret.secretName]));
  if (secretNames.includes(SECRET)) {
    standIns.push(
      `the Secret ${SECRET}: kube play leaves a played Secret's values base64-encoded in the mounted file and cannot ` +
        'feed an env var and a volume from one podman secret; the volume reads a podman secret holding the values as ' +
        `they are, the env var (CLIENT_ID) one named ${SECRET}${ENV_SECRET_SUFFIX} holding them base64-encoded; ` +
        "kube play writes every key of the secret into the volume, mode 0644, whatever the volume's items and defaultMode say",
    );
  }
  const routeSecrets = secretNames.filter((name) => name !== SECRET);
  if (routeSecrets.length > 0) {
    standIns.push(
      `the routes' Secrets ${routeSecrets.join(', ')}: each a podman secret holding its values as they are, for the ` +
        "route's volume, which kube play writes every key of, mode 0644; the ConfigMap of the configuration file is played as rendered",
    );
  }

  // 5. fsGroup, which kube play ignores: the pod's group joins each container's groups, and the
  //    emptyDir is made root:fsGroup 2777 before the pod starts (podCheck), as the kubelet makes it.
  const fsGroup = spec.securityContext?.fsGroup;
  if (fsGroup !== undefined) {
    spec.securityContext.supplementalGroups = [...new Set([...(spec.securityContext.supplementalGroups ?? []), fsGroup])];
    standIns.push(
      `fsGroup ${fsGroup}: kube play ignores it (and podman gives a new volume to the first container's user); it is ` +
        "added to the pod's supplementalGroups, and each emptyDir is a tmpfs volume of its name made beforehand, " +
        `root:${fsGroup} mode 2777, as the kubelet makes it`,
    );
  }

  // The app: the parent chart's own container, given the proxy's image and a command that idles;
  // the standalone form's callers are other pods, stood in for by one added here.
  let app = spec.containers.find((c) => c.name !== PROXY);
  if (app === undefined) {
    app = {
      name: 'caller',
      image,
      env: [{ name: 'TICKETS_BASE_URL', value: `http://127.0.0.1:${envOf(proxy, 'LISTEN_PORT') ?? 8180}` }],
      securityContext: { runAsNonRoot: true, runAsUser: 10001, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
    };
    spec.containers.push(app);
    standIns.push("the standalone proxy's callers (other pods, through its Service): a container of the pod that calls it on loopback");
  }
  app.image = image;
  app.imagePullPolicy = 'Never';
  app.command = [...IDLE];
  const sameAsProxy = {
    image,
    imagePullPolicy: 'Never',
    securityContext: copy(proxy.securityContext),
  };
  if (form.gateways === undefined) {
    spec.containers.push({
      ...copy(sameAsProxy),
      name: 'mock',
      command: [IMAGE_NODE, 'dist/mock/main.js'],
      env: [
        { name: 'MOCK_HOST', value: '127.0.0.1' },
        { name: 'MOCK_PORT', value: String(MOCK.port) },
        { name: 'MOCK_TOKEN_TTL_S', value: '3600' },
      ],
    });
  }
  for (const g of form.gateways ?? []) {
    spec.containers.push({
      ...copy(sameAsProxy),
      name: `gateway-${g.route}`,
      // On one line: a YAML block scalar of it would start with an indented blank line, which kube play's YAML refuses.
      command: [IMAGE_NODE, '-e', GATEWAY.trim().replace(/\n\s*/g, ' '), String(g.port), g.prefix],
      env: [
        { name: 'GATEWAY_CLIENT_ID', value: g.clientId },
        { name: 'GATEWAY_CLIENT_SECRET', value: g.clientSecret },
      ],
    });
  }
  spec.containers.push({ ...copy(sameAsProxy), name: 'intruder', command: [...IDLE] });
  standIns.push(
    `added: ${form.gateways === undefined ? 'the mock Ticket Service (the same image, node dist/mock/main.js)' : `a gateway for each route (${form.gateways.map((g) => `gateway-${g.route} on 127.0.0.1:${g.port}${g.prefix}`).join(', ')}: the mock Ticket Service of the same image, each its own identity provider)`} ` +
      "and an intruder that mounts nothing, all in the proxy's securityContext",
  );

  assertSecurityUnchanged(rendered, deployment, form);

  const socket = envOf(proxy, 'LISTEN_SOCKET');
  const socketVolume = socket === undefined ? undefined : proxy.volumeMounts.find((m) => socket.startsWith(`${m.mountPath}/`))?.name;
  const listenPort = socket === undefined ? Number(envOf(proxy, 'LISTEN_PORT') ?? 8180) : undefined;
  const routes = routesOf(objects, { socket, listenPort });
  return {
    deployment,
    // The configuration file's ConfigMap, played beside the Deployment as the kubelet mounts it.
    configMaps: objects.filter((o) => o.kind === 'ConfigMap' && o.data?.['proxy.yaml'] !== undefined),
    // The Secrets the pod's volumes read besides the credentials' (the routes' own).
    secrets: routeSecrets,
    // kube play names a Deployment's pod after it, numbered.
    podName: `${deployment.metadata.name}-pod-0`,
    app: app.name,
    probes,
    admin: Number(envOf(proxy, 'ADMIN_PORT') ?? 8181),
    listenPort,
    socket,
    // Every socket the proxy makes: the main listener's, and the routes' own.
    sockets: [...(socket === undefined ? [] : [socket]), ...(routes ?? []).flatMap((r) => (r.socketPath ? [r.socketPath] : []))],
    routes,
    socketVolume,
    fsGroup,
    proxyUser: proxy.securityContext.runAsUser,
    graceS: spec.terminationGracePeriodSeconds ?? 30,
    shutdownTimeoutS: Number(envOf(proxy, 'SHUTDOWN_TIMEOUT_S') ?? 15),
    secretVolume: (spec.volumes ?? []).find((v) => v.secret?.secretName === SECRET),
    emptyDirs: emptyDirs(spec, form),
    standIns,
  };
}

/**
 * The routes of the configuration file the chart rendered, each with where the app reaches it
 * ({ socketPath } or { port }, and the path prefix of its mount) and its gateway; undefined
 * without routes.
 */
function routesOf(objects, { socket, listenPort }) {
  const map = objects.find((o) => o.kind === 'ConfigMap' && o.data?.['proxy.yaml'] !== undefined);
  if (map === undefined) return undefined;
  const main = socket === undefined ? { port: listenPort } : { socketPath: socket };
  return parseYaml(map.data['proxy.yaml']).routes.map((r) => ({
    name: r.name,
    way:
      r.mount !== undefined
        ? `mount ${r.mount}`
        : r.listenSocket !== undefined
          ? `socket ${r.listenSocket}`
          : r.listenPort
            ? `port ${r.listenPort}`
            : 'main',
    ...(r.listenSocket !== undefined ? { socketPath: r.listenSocket } : r.listenPort !== undefined ? { port: r.listenPort } : main),
    prefix: r.mount ?? '',
    baseUrl: r.baseUrl,
  }));
}

/** The emptyDir volumes' names; each is a tmpfs here (medium: Memory), as the chart renders them. */
function emptyDirs(spec, form) {
  const dirs = (spec.volumes ?? []).filter((v) => v.emptyDir !== undefined);
  const onDisk = dirs.filter((v) => v.emptyDir.medium !== 'Memory');
  if (onDisk.length > 0)
    throw new Error(`${form.name}: the check plays emptyDir volumes of medium Memory only (${onDisk.map((v) => v.name)})`);
  return dirs.map((v) => v.name);
}

/** A deep copy of plain data (what YAML gives). */
function copy(value) {
  return JSON.parse(JSON.stringify(value));
}

function envOf(container, name) {
  return (container.env ?? []).find((e) => e.name === name)?.value;
}

/**
 * Throws unless every rendered container keeps its securityContext as rendered, and the pod its
 * own, but the supplementalGroups that stand in for fsGroup.
 */
function assertSecurityUnchanged(rendered, played, form) {
  const byName = (spec) => Object.fromEntries([...(spec.initContainers ?? []), ...spec.containers].map((c) => [c.name, c.securityContext]));
  const before = byName(rendered.spec.template.spec);
  const after = byName(played.spec.template.spec);
  for (const [name, context] of Object.entries(before)) {
    if (JSON.stringify(after[name]) !== JSON.stringify(context))
      throw new Error(`${form.name}: a stand-in changed ${name}'s securityContext`);
  }
  const pod = (spec) => JSON.stringify({ ...spec.securityContext, supplementalGroups: undefined });
  if (pod(rendered.spec.template.spec) !== pod(played.spec.template.spec))
    throw new Error(`${form.name}: a stand-in changed the pod's securityContext`);
}
