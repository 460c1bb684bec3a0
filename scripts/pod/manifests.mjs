// The pods the pod check plays: the chart rendered by helm template in its three forms, and what
// stands in for what podman 4.3's kube play cannot play as rendered. Every stand-in is named in
// `standIns`, which the check prints; the rendered securityContext of every container and of the
// pod is never touched.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { IMAGE_NODE } from './podman.mjs';

/** The three forms: the parent chart's pod with the sidecar on TCP and on a socket, and the standalone Deployment. */
export const FORMS = [
  { name: 'sidecar-tcp', chart: 'parent', set: [] },
  { name: 'sidecar-socket', chart: 'parent', set: ['ticket-auth-proxy.listenSocket=/var/run/ticket-auth-proxy/proxy.sock'] },
  { name: 'standalone', chart: 'standalone', set: [] },
];

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
  let out;
  try {
    out = execFileSync(helm, [...args, ...set.flatMap((s) => ['--set', s])], { encoding: 'utf8' });
  } finally {
    if (form.chart === 'parent') rmSync(join(chart, '..', '..'), { recursive: true, force: true });
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
  standIns.push(
    `the Secret ${SECRET}: kube play leaves a played Secret's values base64-encoded in the mounted file and cannot ` +
      'feed an env var and a volume from one podman secret; the volume reads a podman secret holding the values as ' +
      `they are, the env var (CLIENT_ID) one named ${SECRET}${ENV_SECRET_SUFFIX} holding them base64-encoded; ` +
      "kube play writes every key of the secret into the volume, mode 0644, whatever the volume's items and defaultMode say",
  );

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
  spec.containers.push({ ...copy(sameAsProxy), name: 'intruder', command: [...IDLE] });
  standIns.push(
    'added: the mock Ticket Service (the same image, node dist/mock/main.js) and an intruder that mounts nothing, both ' +
      "in the proxy's securityContext",
  );

  assertSecurityUnchanged(rendered, deployment, form);

  const socket = envOf(proxy, 'LISTEN_SOCKET');
  const socketVolume = socket === undefined ? undefined : proxy.volumeMounts.find((m) => socket.startsWith(`${m.mountPath}/`))?.name;
  return {
    deployment,
    // kube play names a Deployment's pod after it, numbered.
    podName: `${deployment.metadata.name}-pod-0`,
    app: app.name,
    probes,
    admin: Number(envOf(proxy, 'ADMIN_PORT') ?? 8181),
    listenPort: socket === undefined ? Number(envOf(proxy, 'LISTEN_PORT') ?? 8180) : undefined,
    socket,
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
