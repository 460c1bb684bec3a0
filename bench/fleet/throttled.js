// `npm run bench:fleet`, the store under a CPU limit: real proxies (dist/main.js), each in a cgroup
// of its own held to a tenth of a core (as `resources.limits.cpu: 100m`: bench/fleet/cpu-limit.js),
// sharing a real redis-server (the documented ACL user; plain, and over TLS) and the mock Ticket
// Service. For each TOKEN_STORE_TIMEOUT_MS tried, in rounds, on a fresh prefix each: the proxies
// start together (one fetches, the others adopt), one pass-through credential is used through all
// of them at once (each derives its key: seconds of scrypt on a tenth of a core), then a token
// lifetime of traffic (a refresh each). Counted: store operations that timed out, and fetches a
// proxy made beside another's (a fetch of a credential less than a quarter of a lifetime after the
// one before: the fleet needs one per refresh, so each is a fetch alone, the store given up on).
// Then, at each timeout, `check` with a wrong store password (does it say WRONGPASS?), and what a
// store that accepts and never answers costs the first request to a proxy just started. The
// smallest timeout at which no store operation timed out or failed in any round, over TLS too, is
// the default docs/token-store.md states. Needs root (a cgroup), redis-server and openssl; otherwise it says
// why and measures nothing.
//
// Settings (environment): FLEET_CPU_TIMEOUTS (the TOKEN_STORE_TIMEOUT_MS values, comma-separated:
// 100,250,500,1000), FLEET_CPU_ROUNDS (2), FLEET_CPU_PROXIES (3), FLEET_CPU_SHARE (0.1),
// FLEET_CPU_TRANSPORTS (plain,tls), FLEET_CPU_MAIN (the proxy's entry: dist/main.js of this tree;
// another tree's to compare).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMockTicketService } from '../../dist/mock/ticket-service.js';
import { freePort, root, until } from '../processes.js';
import { cpuLimit } from './cpu-limit.js';

const USER = { name: 'ticket-proxy', password: 'throttled-store-password' };
const COMMANDS =
  '-@all +auth +hello +ping +select +eval +evalsha +get +set +del +type +pttl +pexpire +hget +hmget +hset +hkeys +hdel +strlen +hstrlen';
const CONFIGURED = { id: 'fleet-client', secret: 'fleet-secret-throttled' };
const PASSTHROUGH = { id: 'caller-client', secret: 'caller-secret-throttled' };
const TTL_S = 8;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A throwaway certificate for localhost, its own CA (openssl). */
function certificate(dir) {
  const cert = join(dir, 'store.pem');
  const key = join(dir, 'store.key');
  const made = spawnSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`);
  return { cert, key };
}

/** A redis-server on a loopback port, with the documented ACL user, no persistence; TLS only with `tls`. */
async function startRedis(dir, tls) {
  const port = await freePort();
  const conf = join(dir, `redis-${port}.conf`);
  writeFileSync(
    conf,
    [
      'bind 127.0.0.1',
      ...(tls
        ? [
            'port 0',
            `tls-port ${port}`,
            `tls-cert-file ${tls.cert}`,
            `tls-key-file ${tls.key}`,
            `tls-ca-cert-file ${tls.cert}`,
            'tls-auth-clients no',
          ]
        : [`port ${port}`]),
      `dir ${dir}`,
      'save ""',
      'appendonly no',
      'requirepass admin-password',
      'loglevel warning',
      `user ${USER.name} on >${USER.password} ~tap-bench:* resetchannels ${COMMANDS}`,
      '',
    ].join('\n'),
  );
  const child = spawn('redis-server', [conf], { stdio: 'ignore' });
  const tlsArgs = tls ? ['--tls', '--cacert', tls.cert] : [];
  const cli = (...args) =>
    spawnSync('redis-cli', ['-h', 'localhost', '-p', String(port), ...tlsArgs, '-a', 'admin-password', '--no-auth-warning', ...args], {
      encoding: 'utf8',
    });
  await until(() => cli('PING').stdout.trim() === 'PONG', 'redis-server', 10_000);
  return {
    env: {
      TOKEN_STORE_URL: `${tls ? 'rediss' : 'redis'}://${USER.name}@localhost:${port}`,
      ...(tls ? { CA_FILE: tls.cert } : {}),
    },
    stop: () => child.kill('SIGKILL'),
  };
}

/** A socket that accepts and never answers: a store that hangs. */
async function blackHole() {
  const sockets = new Set();
  const server = createServer((s) => {
    sockets.add(s);
    s.resume();
    s.on('error', () => undefined);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** One proxy in a cgroup of its own. */
async function startProxy(main, name, share, env) {
  const limit = cpuLimit(name, share);
  if (limit.reason !== undefined) throw new Error(limit.reason);
  const [port, admin] = [await freePort(), await freePort()];
  const [command, ...prefix] = [...limit.wrap, process.execPath];
  const child = spawn(command, [...prefix, main], {
    env: {
      PATH: process.env.PATH,
      LISTEN_HOST: '127.0.0.1',
      LISTEN_PORT: String(port),
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: String(admin),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c) => (output += c));
  child.stderr.setEncoding('utf8').on('data', (c) => (output += c));
  const exited = new Promise((r) => child.once('exit', r));
  return {
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${admin}`,
    output: () => output,
    async metrics() {
      return (await fetch(`${this.adminUrl}/metrics`)).text();
    },
    async stop() {
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000).then(() => child.kill('SIGKILL'))]);
      await exited;
      limit.remove();
    },
  };
}

/** The sum over `texts` of the metric lines matching `pattern` (its first group is the value). */
function sum(texts, pattern) {
  let total = 0;
  for (const text of texts) for (const m of text.matchAll(new RegExp(`^${pattern.source}`, 'gm'))) total += Number(m[1]);
  return total;
}

const basic = (c) => `Basic ${Buffer.from(`${c.id}:${c.secret}`).toString('base64')}`;

/** A request until it answers 200 (a 503 after TOKEN_WAIT_TIMEOUT_MS is tried again): the statuses seen. */
async function untilServed(url, headers) {
  const statuses = [];
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${url}/api/v1/tickets`, { headers });
    await res.arrayBuffer();
    statuses.push(res.status);
    if (res.status === 200) break;
  }
  return statuses;
}

/** Fetches of a credential less than a quarter of a lifetime after the one before: fetches alone. */
function beside(requests, clientId) {
  const at = requests.filter((r) => r.clientId === clientId).map((r) => r.at);
  return at.filter((t, i) => i > 0 && t - at[i - 1] < (TTL_S * 1000) / 4).length;
}

/** One round at `timeoutMs`: what the fleet counted and fetched. */
async function round(options, timeoutMs, n, files) {
  const { main, proxies, share, mock, store } = options;
  const prefix = `tap-bench:${process.pid}-${timeoutMs}-${n}:`;
  const env = {
    BASE_URL: mock.url,
    CLIENT_ID: CONFIGURED.id,
    CLIENT_SECRET: CONFIGURED.secret,
    PASSTHROUGH_BASIC: 'true',
    ...store.env,
    TOKEN_STORE_PASSWORD_FILE: files.password,
    TOKEN_STORE_PREFIX: prefix,
    TOKEN_STORE_TIMEOUT_MS: String(timeoutMs),
  };
  const before = mock.tokenRequests.length;
  const fleet = await Promise.all(Array.from({ length: proxies }, (_, i) => startProxy(main, `tap-bench-${process.pid}-${i}`, share, env)));
  try {
    try {
      await Promise.all(fleet.map((p) => until(async () => (await fetch(`${p.adminUrl}/readyz`)).status === 200, 'ready', 60_000)));
    } catch (err) {
      // What the proxies said, for whoever reads the run's errors.
      for (const p of fleet) process.stderr.write(`--- a proxy of a round not ready:\n${p.output().slice(-4000)}\n`);
      throw err;
    }
    const firstStatuses = await Promise.all(fleet.map((p) => untilServed(p.url, { authorization: basic(PASSTHROUGH) })));
    // A token lifetime of traffic with both credentials: each proxy meets a refresh.
    const end = Date.now() + TTL_S * 1000;
    while (Date.now() < end) {
      await Promise.all(
        fleet.flatMap((p) => [
          fetch(`${p.url}/api/v1/tickets`).then((r) => r.arrayBuffer()),
          fetch(`${p.url}/api/v1/tickets`, { headers: { authorization: basic(PASSTHROUGH) } }).then((r) => r.arrayBuffer()),
        ]),
      );
      await sleep(500);
    }
    const texts = await Promise.all(fleet.map((p) => p.metrics()));
    const fetched = mock.tokenRequests.slice(before);
    return {
      timedOut: sum(texts, /ticket_auth_proxy_token_store_operations_total\{operation="\w+",result="timeout"\} (\S+)/),
      failed: sum(texts, /ticket_auth_proxy_token_store_operations_total\{operation="\w+",result="error"\} (\S+)/),
      adoptions: sum(texts, /ticket_auth_proxy_token_adoptions_total (\S+)/),
      configuredFetches: fetched.filter((r) => r.clientId === CONFIGURED.id).length,
      passthroughFetches: fetched.filter((r) => r.clientId === PASSTHROUGH.id).length,
      beside: beside(fetched, CONFIGURED.id) + beside(fetched, PASSTHROUGH.id),
      waitedOut: firstStatuses.filter((s) => s[0] !== 200).length,
    };
  } finally {
    await Promise.all(fleet.map((p) => p.stop()));
  }
}

/** `check` in a cgroup with a wrong store password: what it names. */
async function wrongPasswordCheck(options, timeoutMs, files) {
  const limit = cpuLimit(`tap-bench-${process.pid}-check`, options.share);
  const [command, ...prefix] = [...limit.wrap, process.execPath];
  const result = spawnSync(command, [...prefix, options.main, 'check'], {
    env: {
      PATH: process.env.PATH,
      BASE_URL: options.mock.url,
      CLIENT_ID: CONFIGURED.id,
      CLIENT_SECRET: CONFIGURED.secret,
      LISTEN_PORT: '0',
      ADMIN_PORT: '0',
      ...options.store.env,
      TOKEN_STORE_PASSWORD_FILE: files.wrong,
      TOKEN_STORE_PREFIX: 'tap-bench:check:',
      TOKEN_STORE_TIMEOUT_MS: String(timeoutMs),
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  limit.remove();
  const text = `${result.stdout}${result.stderr}`;
  return /WRONGPASS/.test(text) ? 'WRONGPASS' : /did not answer within/.test(text) ? 'timeout' : 'other';
}

/** The first request to a proxy just started, its store hanging (or none): its status and how long it took. */
async function firstRequest(options, timeoutMs, store) {
  const env = { BASE_URL: options.mock.url, CLIENT_ID: CONFIGURED.id, CLIENT_SECRET: CONFIGURED.secret };
  if (store !== undefined) {
    Object.assign(env, { TOKEN_STORE_URL: `redis://127.0.0.1:${store.port}`, TOKEN_STORE_TIMEOUT_MS: String(timeoutMs) });
  }
  const proxy = await startProxy(options.main, `tap-bench-${process.pid}-hang`, options.share, env);
  try {
    await until(async () => (await fetch(`${proxy.adminUrl}/livez`)).status === 200, 'listening', 60_000);
    const started = Date.now();
    const res = await fetch(`${proxy.url}/api/v1/tickets`);
    await res.arrayBuffer();
    return { status: res.status, ms: Date.now() - started };
  } finally {
    await proxy.stop();
  }
}

/**
 * Runs the measurement; returns the lines of its report (markdown), or one line saying why it
 * could not run here.
 */
export async function throttledFleet(env = process.env) {
  const share = Number(env.FLEET_CPU_SHARE ?? 0.1);
  const probe = cpuLimit(`tap-bench-${process.pid}-probe`, share);
  if (probe.reason !== undefined) return ['', `Under a CPU limit: not measured here (${probe.reason}; run as root).`];
  probe.remove();
  for (const [program, ...args] of [
    ['redis-server', '--version'],
    ['openssl', 'version'],
  ]) {
    if (spawnSync(program, args).error !== undefined) return ['', `Under a CPU limit: not measured here (no ${program}).`];
  }
  const timeouts = (env.FLEET_CPU_TIMEOUTS ?? '100,250,500,1000').split(',').map(Number);
  const rounds = Number(env.FLEET_CPU_ROUNDS ?? 2);
  const proxies = Number(env.FLEET_CPU_PROXIES ?? 3);
  const transports = (env.FLEET_CPU_TRANSPORTS ?? 'plain,tls').split(',');
  const main = env.FLEET_CPU_MAIN ?? join(root, 'dist/main.js');
  const dir = mkdtempSync(join(tmpdir(), 'fleet-cpu-'));
  const files = { password: join(dir, 'password'), wrong: join(dir, 'wrong-password') };
  writeFileSync(files.password, USER.password);
  writeFileSync(files.wrong, 'not-the-store-password');
  const stores = [];
  const mock = await createMockTicketService({
    clients: { [CONFIGURED.id]: CONFIGURED.secret, [PASSTHROUGH.id]: PASSTHROUGH.secret },
    tokenTtlS: TTL_S,
  });
  const hole = await blackHole();
  const load = loadavg()[0];
  const rows = [];
  try {
    const alone = await firstRequest({ main, share, mock }, 0, undefined);
    for (const transport of transports) {
      const store = await startRedis(dir, transport === 'tls' ? certificate(dir) : undefined);
      stores.push(store);
      const options = { main, proxies, share, mock, store };
      for (const timeoutMs of timeouts) {
        const runs = [];
        let stuck = 0;
        for (let n = 0; n < rounds; n++) {
          // A round whose proxies are not all ready within a minute is counted as such, not measured.
          const run = await round(options, timeoutMs, n, files).catch(() => undefined);
          if (run === undefined) stuck++;
          else runs.push(run);
        }
        const total = (k) => runs.reduce((a, r) => a + r[k], 0);
        const check = await wrongPasswordCheck(options, timeoutMs, files);
        const hung = await firstRequest(options, timeoutMs, hole);
        rows.push(
          `| ${transport} | ${timeoutMs} | ${stuck} | ${total('beside')} | ${total('timedOut')} / ${total('failed')} | ${total('adoptions')} | ` +
            `${total('configuredFetches')} + ${total('passthroughFetches')} | ${total('waitedOut')} | ${check} | ${hung.status} in ${hung.ms} ms |`,
        );
        process.stderr.write(`bench:fleet under a CPU limit: ${transport} ${timeoutMs} ms done\n`);
      }
    }
    return [
      '',
      '## Under a CPU limit',
      '',
      `${proxies} proxies (${main.replace(`${root}/`, '')}), each held to ${share} of a core by a cgroup of its own, sharing a real ` +
        `redis-server (plain, or over TLS); ${rounds} rounds at each TOKEN_STORE_TIMEOUT_MS, each on a fresh prefix: the proxies ` +
        `start together, one pass-through credential is used through all of them at once, then ${TTL_S} s of traffic (tokens of ` +
        `${TTL_S} s: a refresh each). "Fetched alone" counts fetches of a credential less than a quarter of a lifetime after the one ` +
        `before: the fleet needs one per refresh, so each is a proxy that gave the store up. Load average at start: ${load.toFixed(1)} ` +
        `on ${spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()} cores. The first request to a proxy just started without a store: ` +
        `${alone.status} in ${alone.ms} ms.`,
      '',
      '| store | TOKEN_STORE_TIMEOUT_MS | rounds not ready within a minute | fetched alone | operations timed out / failed | adoptions | fetches (configured + pass-through) | first pass-through requests past their wait | `check`, wrong store password | first request, store hanging |',
      '|---|--:|--:|--:|--:|--:|--:|--:|---|---|',
      ...rows,
    ];
  } finally {
    hole.close();
    await mock.close();
    for (const store of stores) store.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// Run on its own: `node bench/fleet/throttled.js` (after `npm run build`).
if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${(await throttledFleet()).join('\n')}\n`);
}
