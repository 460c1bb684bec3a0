// The pod check's plays and assertions (scripts/pod-check.sh builds the image, then runs this):
//   node scripts/pod/check.mjs WORK IMAGE HELM [FORM...]
// For each form of the chart (manifests.mjs): renders it, plays it with podman kube play
// --network none, and asserts what Kubernetes would show. Prints what it proved; exits 1 at the
// first failure, with the containers' logs.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { APP_CALLS, CONNECT, FETCH, IN_FLIGHT, ROUTE_CALLS, STAT, WRITE_ROOT } from './in-pod.mjs';
import { ENV_SECRET_SUFFIX, FORMS, GATEWAYS, MOCK, podToPlay, PROXY, render, SECRET } from './manifests.mjs';
import { createPodman, IMAGE_NODE } from './podman.mjs';

const [work, image, helm, ...only] = process.argv.slice(2);
const root = resolve(import.meta.dirname, '..', '..');
const podman = createPodman(work);
const say = (line) => process.stdout.write(`pod-check: ${line}\n`);
/** Requests the app makes each way; all but the first are served with the token of the first fetch. */
const REQUESTS = 20;

class CheckFailure extends Error {}
const expect = (ok, what) => {
  if (!ok) throw new CheckFailure(what);
};

/** A GET of the proxy's admin listener from the pod's network namespace, as the kubelet probes it. */
function fromOutside(infraPid, port, path) {
  const r = spawnSync('nsenter', ['-t', String(infraPid), '-n', process.execPath, '-e', FETCH, `http://127.0.0.1:${port}${path}`], {
    encoding: 'utf8',
  });
  return JSON.parse(r.stdout.trim() || `{"error":${JSON.stringify(r.stderr.trim())}}`);
}

async function until(what, fn, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new CheckFailure(`${what} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The podman secrets the credentials' Secret and the routes' own stand in for (manifests.mjs, stand-in 4). */
function makeSecrets(play) {
  podman.try(['secret', 'rm', SECRET, `${SECRET}${ENV_SECRET_SUFFIX}`, ...play.secrets]);
  const create = (name, content) => {
    // From a file: podman takes stdin only from a FIFO, and Node's pipes are socket pairs.
    const file = join(work, `${name}.secret`);
    writeFileSync(file, content);
    podman.run(['secret', 'create', name, file]);
  };
  // The volume: a Secret whose data holds the values as they are (kube play 4.3 writes the stored
  // values to the files without decoding them).
  create(SECRET, stringify({ data: { 'client-id': MOCK.clientId, 'client-secret': MOCK.clientSecret } }));
  // The env var: the Secret's data, each value base64-encoded, as kube play stores a played one.
  const b64 = (s) => Buffer.from(s).toString('base64');
  create(`${SECRET}${ENV_SECRET_SUFFIX}`, JSON.stringify({ 'client-id': b64(MOCK.clientId), 'client-secret': b64(MOCK.clientSecret) }));
  // A route's Secret: its gateway's client secret, mounted as the route's secret file.
  for (const name of play.secrets) {
    const gateway = GATEWAYS.find((g) => g.secret === name);
    if (gateway === undefined) throw new Error(`no gateway of the check holds the Secret ${name}`);
    create(name, stringify({ data: { 'client-secret': gateway.clientSecret } }));
  }
}

async function checkForm(form) {
  say(`=== ${form.name} ===`);
  const play = podToPlay(render(form, { root, helm, image }), form, image);
  for (const s of play.standIns) say(`  stands in: ${s}`);
  const manifest = join(work, `${form.name}.yaml`);
  // No folded lines: kube play's YAML misreads a folded scalar that starts with a blank line.
  writeFileSync(manifest, [play.deployment, ...play.configMaps].map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
  makeSecrets(play);
  podman.try(['pod', 'rm', '--force', play.podName]);
  // A volume of an earlier play would be reused as it is.
  podman.try(['volume', 'prune', '--force']);
  // The emptyDirs as the kubelet makes them (medium: Memory, a tmpfs), root:fsGroup 2777 with an
  // fsGroup: kube play uses a volume of the emptyDir's name that exists.
  for (const name of play.emptyDirs) {
    const owner = play.fsGroup === undefined ? 'mode=0777' : `mode=2777,uid=0,gid=${play.fsGroup}`;
    podman.run(['volume', 'create', '--opt', 'type=tmpfs', '--opt', 'device=tmpfs', '--opt', `o=${owner}`, name]);
  }
  podman.run(['kube', 'play', '--network', 'none', '--start=false', manifest]);
  const ctr = (name) => `${play.podName}-${name}`;
  const proxy = ctr(PROXY);
  try {
    podman.run(['pod', 'start', play.podName]);
    const infra = podman.run(['pod', 'inspect', play.podName, '--format', '{{.InfraContainerID}}']).trim();
    const infraPid = Number(podman.run(['container', 'inspect', infra, '--format', '{{.State.Pid}}']).trim());
    const probe = (path) => fromOutside(infraPid, play.admin, path);
    await until(
      'the proxy answered /readyz 200',
      () => {
        // The pod restarts a proxy that exits (restartPolicy: Always): the first exit is the answer.
        const [status, code, restarts] = podman
          .run(['container', 'inspect', proxy, '--format', '{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}'])
          .trim()
          .split(' ');
        const exited = status === 'exited' ? `exited with status ${code}` : `exited and was restarted ${restarts} times`;
        expect(status !== 'exited' && restarts === '0', `the proxy starts (it ${exited}; its output is above)`);
        return probe('/readyz').status === 200;
      },
      90_000,
    );
    await proxied(play, ctr, probe, form);
    await drained(play, ctr);
  } catch (err) {
    for (const name of [PROXY, ...(form.gateways === undefined ? ['mock'] : form.gateways.map((g) => `gateway-${g.route}`))]) {
      const logs = podman.try(['logs', ctr(name)]);
      say(`--- logs of ${name} ---\n${logs.stdout}${logs.stderr}`);
    }
    throw err;
  } finally {
    podman.try(['kube', 'down', manifest]);
    podman.try(['pod', 'rm', '-f', play.podName]);
  }
}

/** The successful token fetches of each route on /metrics, by route: { default: 1 } for the single route. */
function fetchesByRoute(metrics) {
  const fetches = {};
  for (const m of metrics.matchAll(/^ticket_auth_proxy_token_fetches_total\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.outcome === 'success') fetches[labels.route] = (fetches[labels.route] ?? 0) + Number(m[2]);
  }
  return fetches;
}

/**
 * The routes form: from the app's container, requests along each route (a mount on the main
 * listener, a socket of its own) reach that route's gateway alone, with its client's token; the
 * main listener's paths no route takes are refused; one token fetch per route, each at its own
 * identity provider, as each gateway recorded.
 */
async function routesProxied(play, ctr, probe, form) {
  const targets = play.routes.map((r) => ({
    route: r.name,
    ...(r.socketPath ? { socketPath: r.socketPath } : { port: r.port }),
    path: `${r.prefix}/api/v1/tickets`,
  }));
  const calls = podman.node(ctr(play.app), ROUTE_CALLS, [String(REQUESTS / 2), JSON.stringify(targets)]);
  for (const route of play.routes) {
    const gateway = form.gateways.find((g) => g.route === route.name);
    const mine = calls.filter((c) => c.route === route.name);
    const bad = mine.filter((c) => c.status !== 200 || c.workspace !== gateway.clientId);
    expect(
      mine.length === REQUESTS / 2 && bad.length === 0,
      `every call along the route ${route.name} gets its gateway's tickets (200, workspace ${gateway.clientId}): ${JSON.stringify(bad.slice(0, 3))}`,
    );
    const record = gatewayRecord(ctr, gateway);
    const served = record.filter((l) => l.api !== undefined);
    const wrong = served.filter((l) => !l.tokenValid || !l.api.startsWith(`GET ${gateway.prefix}/api/v1/tickets`));
    const tokens = record.filter((l) => l.token !== undefined);
    expect(
      served.length === mine.length && wrong.length === 0,
      `the gateway ${gateway.route} served the route's ${mine.length} calls, each with a token it issued: ${JSON.stringify(wrong.slice(0, 3))} of ${served.length}`,
    );
    expect(
      tokens.length === 1 && tokens[0].token === gateway.clientId,
      `the identity provider of ${gateway.route} was asked for one token, for ${gateway.clientId}: ${JSON.stringify(tokens)}`,
    );
    say(
      `  route ${route.name} (${route.way}, ${route.socketPath ? 'through the socket' : 'over loopback'}): ${mine.length} of ${mine.length} GET ${targets.find((t) => t.route === route.name).path} ` +
        `answered 200 with ${gateway.clientId}'s tickets; its gateway ${route.baseUrl} served all ${served.length}, each with a token it issued, and its identity provider issued one, to ${gateway.clientId}`,
    );
  }
  const [outside] = podman.node(ctr(play.app), ROUTE_CALLS, [
    '1',
    JSON.stringify([{ route: '', port: play.listenPort, path: '/api/v1/tickets' }]),
  ]);
  expect(
    outside.status === 404 && outside.code === 'not_proxied',
    `a path no route takes is refused (404 not_proxied): ${JSON.stringify(outside)}`,
  );
  say(`  GET /api/v1/tickets on the main listener, which no route takes: ${outside.status} ${outside.code}`);
  const ready = JSON.parse(probe('/readyz').body ?? '{}');
  const fetches = fetchesByRoute(probe('/metrics').body ?? '');
  const names = play.routes.map((r) => r.name);
  expect(
    names.every((n) => ready.routes?.[n]?.ready === true && fetches[n] === 1),
    `each route ready, with one token fetch: /readyz ${JSON.stringify(ready)}, fetches ${JSON.stringify(fetches)}`,
  );
  say(`  /readyz ${JSON.stringify(ready)}; token fetches by route ${JSON.stringify(fetches)} (ticket_auth_proxy_token_fetches_total)`);
}

/** What a gateway of the routes form recorded: its JSON lines (GATEWAY in in-pod.mjs). */
function gatewayRecord(ctr, gateway) {
  const logs = podman.run(['logs', ctr(`gateway-${gateway.route}`)]);
  return logs
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

/** Everything but the shutdown: who the proxy runs as, who reaches it, the probes, the token. */
async function proxied(play, ctr, probe, form) {
  const proxy = ctr(PROXY);
  const pid = Number(podman.run(['container', 'inspect', proxy, '--format', '{{.State.Pid}}']).trim());
  const status = spawnSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' }).stdout;
  const uids = /^Uid:\s+(.*)$/m.exec(status)[1].split(/\s+/).map(Number);
  expect(
    uids.every((u) => u === play.proxyUser),
    `the proxy runs as uid ${play.proxyUser} (real, effective, saved, fs): ${uids}`,
  );
  const groups = /^Groups:\s*(.*)$/m.exec(status)[1].trim().split(/\s+/).filter(Boolean).map(Number);
  const capEff = /^CapEff:\s+(\S+)$/m.exec(status)[1];
  expect(/^0+$/.test(capEff), `the proxy holds no capabilities (CapEff ${capEff})`);
  const write = podman.node(proxy, WRITE_ROOT);
  expect(write.error === 'EROFS', `the proxy's root filesystem is read-only (a write gave ${JSON.stringify(write)})`);
  say(
    `  the proxy runs as uid ${play.proxyUser} (groups ${groups.join(' ') || 'none'}), no capabilities, on a read-only root (a write: EROFS)`,
  );

  for (const [kind, p] of Object.entries(play.probes)) {
    const answer = probe(p.path);
    expect(
      answer.status >= 200 && answer.status < 400,
      `the ${kind} (GET ${p.path} on port ${p.port}) answers 2xx/3xx: ${JSON.stringify(answer)}`,
    );
    say(`  ${kind}: GET ${p.path} on port ${p.port}: ${answer.status}, from the pod's network namespace`);
  }

  if (play.routes !== undefined) await routesProxied(play, ctr, probe, form);
  else appProxied(play, ctr, probe);

  if (play.sockets.length > 0) {
    const [socket] = play.sockets.slice(-1);
    const file = podman.node(ctr(play.app), STAT, [socket]);
    expect(
      file.socket === true && file.mode === '0660' && file.gid === play.fsGroup,
      `the socket is 0660, group ${play.fsGroup}: ${JSON.stringify(file)}`,
    );
    const intruder = podman.node(ctr('intruder'), CONNECT, [socket]);
    expect(intruder.error === 'ENOENT', `a container that does not mount the socket's volume cannot reach it: ${JSON.stringify(intruder)}`);
    const stranger = podman.node(ctr(play.app), CONNECT, [socket], { user: '4242:4242' });
    expect(stranger.error === 'EACCES', `a process of uid 4242 without the pod's group cannot connect: ${JSON.stringify(stranger)}`);
    say(
      `  the socket ${socket}: mode ${file.mode}, group ${file.gid} (fsGroup); the intruder container (no volume): ${intruder.error}; uid 4242 in the app's container without the group: ${stranger.error}`,
    );
  }
  if (play.listenPort !== undefined) {
    const path = `${play.routes?.find((r) => r.port === play.listenPort)?.prefix ?? ''}/api/v1/tickets`;
    const intruder = podman.node(ctr('intruder'), FETCH, [`http://127.0.0.1:${play.listenPort}${path}`]);
    say(
      `  on loopback every container of the pod reaches the proxy: the intruder container got ${intruder.status ?? intruder.error} for ${path}`,
    );
  }
}

/** The app's calls in the forms without routes: through the socket or over loopback, one token for all. */
function appProxied(play, ctr, probe) {
  const calls = podman.node(ctr(play.app), APP_CALLS, [String(REQUESTS)]);
  const ways = [...new Set(calls.map((c) => c.via))];
  const expected = play.socket === undefined ? ['tcp'] : ['socket'];
  expect(JSON.stringify(ways) === JSON.stringify(expected), `the app calls the proxy ${expected.join(' and ')}: it called ${ways}`);
  const bad = calls.filter((c) => c.status !== 200 || c.workspace !== MOCK.clientId);
  expect(bad.length === 0, `every call of the app gets the tickets (200, workspace ${MOCK.clientId}): ${JSON.stringify(bad.slice(0, 3))}`);
  say(
    `  the app (${play.app}): ${calls.length} of ${calls.length} GET /api/v1/tickets answered 200 ${ways.map((w) => (w === 'tcp' ? 'over loopback' : 'through the socket')).join(', ')}`,
  );

  const fetches = fetchesByRoute(probe('/metrics').body ?? '');
  expect(
    JSON.stringify(fetches) === '{"default":1}',
    `one token fetch for ${calls.length} requests (ticket_auth_proxy_token_fetches_total{outcome="success"} by route: ${JSON.stringify(fetches)})`,
  );
  say(`  one token fetch for ${calls.length} requests (ticket_auth_proxy_token_fetches_total)`);
}

/** SIGTERM through `podman stop -t <grace>`: a request in flight finishes, the proxy exits 0 in time, the socket goes. */
async function drained(play, ctr) {
  const proxy = ctr(PROXY);
  const holdMs = 2000;
  // Along the main listener's first route when there are routes (its mount, over loopback).
  const prefix = play.routes?.find((r) => r.port === play.listenPort)?.prefix ?? '';
  const inFlight = podman.spawn(['exec', ctr(play.app), IMAGE_NODE, '-e', IN_FLIGHT, String(holdMs), prefix]);
  let out = '';
  inFlight.stdout.setEncoding('utf8').on('data', (c) => (out += c));
  const done = new Promise((r) => inFlight.once('exit', r));
  await until('the in-flight request reached the proxy (100 Continue)', () => out.includes('in flight'), 30_000);
  const started = Date.now();
  podman.run(['stop', '-t', String(play.graceS), proxy]);
  const tookS = (Date.now() - started) / 1000;
  await done;
  const answer = JSON.parse(out.trim().split('\n').at(-1));
  const code = Number(podman.run(['container', 'inspect', proxy, '--format', '{{.State.ExitCode}}']).trim());
  expect(answer.status === 200, `the request in flight while the proxy stopped was answered 200: ${JSON.stringify(answer)}`);
  expect(code === 0, `the proxy exits 0 after SIGTERM (exit ${code})`);
  expect(tookS < play.graceS, `the proxy stopped within the grace period (${tookS.toFixed(1)} s of ${play.graceS} s)`);
  let gone = '';
  for (const socket of play.sockets) {
    const file = podman.node(ctr(play.app), STAT, [socket]);
    expect(file.error === 'ENOENT', `the socket ${socket} is removed at shutdown: ${JSON.stringify(file)}`);
    gone = `, ${play.sockets.length === 1 ? 'the socket' : 'the sockets'} removed`;
  }
  say(`  podman stop -t ${play.graceS} (SIGTERM): the request in flight answered 200, exit 0 in ${tookS.toFixed(1)} s${gone}`);
}

const forms = only.length === 0 ? FORMS : FORMS.filter((f) => only.includes(f.name));
const started = Date.now();
try {
  for (const form of forms) await checkForm(form);
} catch (err) {
  say(`FAILED: ${err instanceof CheckFailure ? `expected ${err.message}` : err.stack}`);
  process.exit(1);
}
say(`OK in ${Math.round((Date.now() - started) / 1000)} s: ${forms.map((f) => f.name).join(', ')} played as Kubernetes runs them`);
