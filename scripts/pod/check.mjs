// The pod check's plays and assertions (scripts/pod-check.sh builds the image, then runs this):
//   node scripts/pod/check.mjs WORK IMAGE HELM [FORM...]
// For each form of the chart (manifests.mjs): renders it, plays it with podman kube play
// --network none, and asserts what Kubernetes would show. Prints what it proved; exits 1 at the
// first failure, with the containers' logs.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { APP_CALLS, CONNECT, FETCH, IN_FLIGHT, STAT, WRITE_ROOT } from './in-pod.mjs';
import { ENV_SECRET_SUFFIX, FORMS, MOCK, podToPlay, PROXY, render, SECRET } from './manifests.mjs';
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

/** The podman secrets the credentials' Secret stands in for (manifests.mjs, stand-in 4). */
function makeSecrets() {
  podman.try(['secret', 'rm', SECRET, `${SECRET}${ENV_SECRET_SUFFIX}`]);
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
}

async function checkForm(form) {
  say(`=== ${form.name} ===`);
  const play = podToPlay(render(form, { root, helm, image }), form, image);
  for (const s of play.standIns) say(`  stands in: ${s}`);
  const manifest = join(work, `${form.name}.yaml`);
  writeFileSync(manifest, stringify(play.deployment));
  makeSecrets();
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
    await proxied(play, ctr, probe);
    await drained(play, ctr);
  } catch (err) {
    for (const name of [PROXY, 'mock']) {
      const logs = podman.try(['logs', ctr(name)]);
      say(`--- logs of ${name} ---\n${logs.stdout}${logs.stderr}`);
    }
    throw err;
  } finally {
    podman.try(['kube', 'down', manifest]);
    podman.try(['pod', 'rm', '-f', play.podName]);
  }
}

/** Everything but the shutdown: who the proxy runs as, who reaches it, the probes, the token. */
async function proxied(play, ctr, probe) {
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

  const calls = podman.node(ctr(play.app), APP_CALLS, [String(REQUESTS)]);
  const ways = [...new Set(calls.map((c) => c.via))];
  const expected = play.socket === undefined ? ['tcp'] : ['socket'];
  expect(JSON.stringify(ways) === JSON.stringify(expected), `the app calls the proxy ${expected.join(' and ')}: it called ${ways}`);
  const bad = calls.filter((c) => c.status !== 200 || c.workspace !== MOCK.clientId);
  expect(bad.length === 0, `every call of the app gets the tickets (200, workspace ${MOCK.clientId}): ${JSON.stringify(bad.slice(0, 3))}`);
  say(
    `  the app (${play.app}): ${calls.length} of ${calls.length} GET /api/v1/tickets answered 200 ${ways.map((w) => (w === 'tcp' ? 'over loopback' : 'through the socket')).join(', ')}`,
  );

  const metrics = probe('/metrics').body ?? '';
  const fetches = [...metrics.matchAll(/^ticket_auth_proxy_token_fetches_total\{outcome="success"\} (\d+)/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  expect(
    fetches === 1,
    `one token fetch for ${calls.length} requests (ticket_auth_proxy_token_fetches_total{outcome="success"} ${fetches})`,
  );
  say(`  one token fetch for ${calls.length} requests (ticket_auth_proxy_token_fetches_total)`);

  if (play.socket !== undefined) {
    const file = podman.node(ctr(play.app), STAT, [play.socket]);
    expect(
      file.socket === true && file.mode === '0660' && file.gid === play.fsGroup,
      `the socket is 0660, group ${play.fsGroup}: ${JSON.stringify(file)}`,
    );
    const intruder = podman.node(ctr('intruder'), CONNECT, [play.socket]);
    expect(intruder.error === 'ENOENT', `a container that does not mount the socket's volume cannot reach it: ${JSON.stringify(intruder)}`);
    const stranger = podman.node(ctr(play.app), CONNECT, [play.socket], { user: '4242:4242' });
    expect(stranger.error === 'EACCES', `a process of uid 4242 without the pod's group cannot connect: ${JSON.stringify(stranger)}`);
    say(
      `  the socket ${play.socket}: mode ${file.mode}, group ${file.gid} (fsGroup); the intruder container (no volume): ${intruder.error}; uid 4242 in the app's container without the group: ${stranger.error}`,
    );
  } else {
    const intruder = podman.node(ctr('intruder'), FETCH, [`http://127.0.0.1:${play.listenPort}/api/v1/tickets`]);
    say(`  on loopback every container of the pod reaches the proxy: the intruder container got ${intruder.status ?? intruder.error}`);
  }
}

/** SIGTERM through `podman stop -t <grace>`: a request in flight finishes, the proxy exits 0 in time, the socket goes. */
async function drained(play, ctr) {
  const proxy = ctr(PROXY);
  const holdMs = 2000;
  const inFlight = podman.spawn(['exec', ctr(play.app), IMAGE_NODE, '-e', IN_FLIGHT, String(holdMs)]);
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
  if (play.socket !== undefined) {
    const file = podman.node(ctr(play.app), STAT, [play.socket]);
    expect(file.error === 'ENOENT', `the socket is removed at shutdown: ${JSON.stringify(file)}`);
    gone = ', the socket removed';
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
