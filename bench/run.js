// `npm run bench`: what the proxy costs per request, beside the two baselines, in one run.
//
// Starts on loopback an upstream (bench/upstream.js), the mock token endpoint, the product as a
// user starts it (node dist/main.js with environment settings) and the two baselines in
// bench/baselines/; loads each scenario with wrk when it is on PATH, else autocannon; runs the
// candidates interleaved after a warm-up, in an order that turns each round (A B C, B C A, C A B,
// then backwards), and reports medians of the rounds.
// See bench/README.md for how to read it.
//
// Settings (environment): BENCH_DURATION_S (5), BENCH_ROUNDS (3), BENCH_WARMUP_S (2),
// BENCH_SCENARIOS (get-1k,post-64k,get-1m,https-get-1k,get-1k-dpop,get-1k-dpop-eddsa; also
// get-1k-passthrough), BENCH_LOAD (wrk|autocannon; default wrk if found),
// BENCH_UPSTREAM (nginx|node; default nginx if found), BENCH_NODE_OPTIONS (extra node flags for
// every candidate, e.g. --max-semi-space-size=8), BENCH_PRODUCT_NODE_OPTIONS (NODE_OPTIONS for the
// product; default: what the Dockerfile sets, so the product runs as the image runs it), BENCH_PROFILE=1 (the product writes a CPU
// profile per candidate and scenario to bench/results/profiles/<candidate>/; read one with
// bench/profile-top.js), BENCH_BEFORE (the dist/main.js of another build of the product, run
// beside it exactly as the product is, for a before/after comparison within one run),
// BENCH_BEFORE_ENV (`NAME=value ...`, set for `before` alone on top of the product's environment:
// the same build under other settings, e.g. `LD_PRELOAD= NODE_OPTIONS=` for glibc and V8's
// defaults; BENCH_BEFORE defaults to the product's own dist/main.js when only this is given),
// BENCH_PIN=1 (the proxies on processor 1, the load generator and the upstream on processor 0).
// https-get-1k: the same GET against an HTTPS upstream (bench/upstream.js with a certificate from
// a CA made with openssl for the run), the product trusting it with CA_FILE and the minimal
// undici proxy with NODE_EXTRA_CA_CERTS; it counts the upstream's TLS handshakes per candidate,
// which keep-alive holds at the number of pooled connections, not the number of requests.
// get-1k-dpop, get-1k-dpop-eddsa: the same GET with DPOP=on (RFC 9449: every forwarded request
// carries a proof signed with the proxy's key), with the default generated P-256 key (ES256) and
// with DPOP_ALG=EdDSA. The product is run beside itself with DPoP off ("bearer"), interleaved in
// the same rounds, instead of the baselines; the upstream accepts `Authorization: DPoP` and counts
// the requests that carry a `DPoP` header, so the report says whether the tokens were DPoP-bound.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { createMockTicketService } from '../dist/mock/ticket-service.js';
import { freePort, imageAllocatorEnv, imageNodeOptions, root } from './processes.js';

const env = process.env;
const durationS = Number(env.BENCH_DURATION_S ?? 5);
const rounds = Number(env.BENCH_ROUNDS ?? 3);
const warmupS = Number(env.BENCH_WARMUP_S ?? 2);
const nodeFlags = (env.BENCH_NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean);
const hasWrk = spawnSync('wrk', ['--version']).error === undefined;
const loadTool = env.BENCH_LOAD ?? (hasWrk ? 'wrk' : 'autocannon');
const hasNginx = spawnSync('nginx', ['-v']).error === undefined;
const upstreamKind = env.BENCH_UPSTREAM ?? (hasNginx ? 'nginx' : 'node');
const clockTicks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

const SCENARIOS = {
  'get-1k': { method: 'GET', path: '/api/v1/tickets', connections: 50, bodyBytes: 0 },
  'post-64k': { method: 'POST', path: '/api/v1/tickets', connections: 50, bodyBytes: 64 * 1024 },
  'get-1m': { method: 'GET', path: '/api/v1/blob', connections: 50, bodyBytes: 0 },
  'https-get-1k': { method: 'GET', path: '/api/v1/tickets', connections: 50, bodyBytes: 0, tls: true },
  // get-1k with the workspace's credentials as Basic in every request (PASSTHROUGH_BASIC=true,
  // README "Several workspaces behind one proxy"): each request finds its token source by HMAC. Not run by default.
  'get-1k-passthrough': { method: 'GET', path: '/api/v1/tickets', connections: 50, bodyBytes: 0, basic: 'bench-client:bench-secret' },
  // get-1k with sender-constrained tokens: a proof signed per request (README, "DPoP").
  'get-1k-dpop': { method: 'GET', path: '/api/v1/tickets', connections: 50, bodyBytes: 0, dpop: 'ES256' },
  'get-1k-dpop-eddsa': { method: 'GET', path: '/api/v1/tickets', connections: 50, bodyBytes: 0, dpop: 'EdDSA' },
};
const scenarioNames = (
  env.BENCH_SCENARIOS ??
  Object.keys(SCENARIOS)
    .filter((n) => !SCENARIOS[n].basic)
    .join(',')
).split(',');
const BASELINE = 'undici-minimal';
const productNodeOptions = env.BENCH_PRODUCT_NODE_OPTIONS ?? imageNodeOptions();
const productAllocator = imageAllocatorEnv(env);
const profileFlags = (name) =>
  env.BENCH_PROFILE === '1' ? ['--cpu-prof', `--cpu-prof-dir=${join(root, 'bench/results/profiles', name)}`] : [];
const PRODUCT = 'ticket-auth-proxy';
const BEFORE = 'before';
/** In the DPoP scenarios: the product with DPoP off, run in the same rounds as the product with it on. */
const BEARER = 'bearer';
/** The CPU per request DPoP may cost with the default key, against the Bearer path's. */
const DPOP_CPU_TARGET = 2;
/** `NAME=value NAME2=` → { NAME: 'value', NAME2: '' } (an empty value unsets LD_PRELOAD, say). */
const beforeEnv = Object.fromEntries(
  (env.BENCH_BEFORE_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf('=');
      if (at < 1) throw new Error(`BENCH_BEFORE_ENV: "${pair}" is not NAME=value`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
);
const beforeMain = env.BENCH_BEFORE ? resolvePath(env.BENCH_BEFORE) : env.BENCH_BEFORE_ENV ? join(root, 'dist/main.js') : undefined;
if (beforeMain && !existsSync(beforeMain)) throw new Error(`BENCH_BEFORE: ${beforeMain} does not exist (give a build's dist/main.js)`);

const work = mkdtempSync(join(tmpdir(), 'tap-bench-'));
chmodSync(work, 0o755); // nginx's worker runs as an unprivileged user when the bench runs as root
const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));

// ---------------------------------------------------------------------------------------------

/**
 * BENCH_PIN=1: the proxies on one processor, the load generator and the upstream on the other
 * (`taskset`), so a candidate does not share its processor with the load it is measured under.
 */
const PIN = env.BENCH_PIN === '1';
if (PIN && cpus().length < 2) throw new Error(`BENCH_PIN=1 needs two processors (this machine has ${cpus().length})`);
const PROXY_CPU = '1';
const LOAD_CPU = '0';
function pinned(cpu, command, args) {
  return PIN ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
}

/** Starts a node process and resolves once `ready` says so (a line on stdout, or a poll). */
function startNode(name, args, { env: extraEnv = {}, readyLine = /^ready /m, ready } = {}) {
  const [command, argv] = pinned(name === 'upstream' || name === 'upstream-tls' ? LOAD_CPU : PROXY_CPU, process.execPath, [
    ...nodeFlags,
    ...args,
  ]);
  const child = spawn(command, argv, {
    cwd: root,
    env: { ...env, NODE_OPTIONS: '', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  const collect = (chunk) => {
    if (output.length < 64 * 1024) output += chunk;
  };
  child.stdout.setEncoding('utf8').on('data', collect);
  child.stderr.setEncoding('utf8').on('data', collect);
  const started = new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`${name} did not start within 20 s:\n${output}`)), 20_000);
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it was ready:\n${output}`)));
    const done = () => {
      clearTimeout(deadline);
      resolve({ name, child, pid: child.pid, output: () => output });
    };
    if (ready) ready().then(done, reject);
    else child.stdout.on('data', () => readyLine.test(output) && done());
  });
  return started;
}

async function pollOk(url, deadlineMs = 20_000, headers = {}) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      const response = await fetch(url, { headers });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`${url} did not answer 200 within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGTERM, then SIGKILL after 10 s: a candidate that hung (http-proxy has, under get-1m) cannot hang the run. */
async function stop({ child }) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(kill);
  children.delete(child);
}

/** CPU time (user + system) of a process, in microseconds. */
function cpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / clockTicks;
}

/** Peak resident set of a process (VmHWM), in MB. */
function peakRssMb(pid) {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

function median(values) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The order of the candidates in a round: turned by one each round, and backwards every other
 * cycle, so that no candidate always runs first, or always after the same one.
 */
function roundOrder(candidates, round) {
  const n = candidates.length;
  const turned = candidates.map((_, i) => candidates[(i + round) % n]);
  return Math.floor(round / n) % 2 ? turned.reverse() : turned;
}

/**
 * The geometric mean of per-round ratios and a 95 % interval for it, by resampling the rounds
 * (a fixed seed, so the same rounds print the same interval). With few rounds the interval is
 * wide, which is the point: it says how far apart two candidates must be to be told apart.
 */
function geometricMeanInterval(ratios) {
  const logs = ratios.filter((r) => r > 0 && Number.isFinite(r)).map(Math.log);
  if (logs.length === 0) return { mean: NaN, low: NaN, high: NaN };
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  let seed = 1;
  const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const means = [];
  for (let i = 0; i < 2000; i++) means.push(mean(logs.map(() => logs[Math.floor(random() * logs.length)])));
  means.sort((a, b) => a - b);
  return { mean: Math.exp(mean(logs)), low: Math.exp(means[50]), high: Math.exp(means[1949]) };
}

// ---------------------------------------------------------------------------------------------
// Load generators: each resolves { requests, rps, p50Ms, p99Ms, errors }.

function run(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(...pinned(LOAD_CPU, command, args), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
    child.once('error', reject);
    child.once('exit', (code) => {
      children.delete(child);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} exited ${code}: ${stderr || stdout}`));
    });
  });
}

function wrkDuration(text) {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!match) return NaN;
  const scale = { us: 1e-3, ms: 1, s: 1e3, m: 60e3 }[match[2]];
  return Number(match[1]) * scale;
}

async function loadWrk(url, scenario, seconds) {
  const args = ['-t1', `-c${scenario.connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s'];
  if (scenario.method === 'POST') {
    const script = join(work, `post-${scenario.bodyBytes}.lua`);
    writeFileSync(
      script,
      `wrk.method = "POST"\nwrk.body = string.rep("x", ${scenario.bodyBytes})\nwrk.headers["Content-Type"] = "application/octet-stream"\n`,
    );
    args.push('-s', script);
  }
  if (scenario.basic) args.push('-H', `Authorization: Basic ${Buffer.from(scenario.basic).toString('base64')}`);
  const out = await run('wrk', [...args, url]);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = non2xx + (socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return {
    requests,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50Ms: wrkDuration(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    p99Ms: wrkDuration(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    errors,
  };
}

async function loadAutocannon(url, scenario, seconds) {
  const out = await run(process.execPath, [join(root, 'bench/load-autocannon.js'), JSON.stringify({ url, seconds, ...scenario })]);
  return JSON.parse(out);
}

const load = loadTool === 'wrk' ? loadWrk : loadAutocannon;

// ---------------------------------------------------------------------------------------------

async function startCandidates(upstreamOrigin, tokenService, secretFile, tls, scenario) {
  const staticToken = 'bench-static-token';
  const minimalPort = await freePort();
  const httpProxyPort = await freePort();
  const productPort = await freePort();
  const adminPort = await freePort();
  const tokenFetchesBefore = tokenService.tokenRequests.length;
  const dpop = scenario.dpop !== undefined;
  const beforePort = beforeMain && !dpop ? await freePort() : undefined;
  const beforeAdminPort = beforePort ? await freePort() : undefined;
  const bearerPort = dpop ? await freePort() : undefined;
  const bearerAdminPort = dpop ? await freePort() : undefined;
  // DPOP=on with a generated key: the default key type (ES256) takes no DPOP_ALG.
  const dpopEnv = dpop ? { DPOP: 'on', ...(scenario.dpop === 'ES256' ? {} : { DPOP_ALG: scenario.dpop }) } : {};
  // The product, and the build it is compared with, started as a user starts it.
  const startProduct = (name, main, port, admin, clientId, extra = {}) =>
    startNode(name, [...profileFlags(name), main], {
      env: {
        BASE_URL: upstreamOrigin,
        TOKEN_URL: `${tokenService.url}/api/v1/oauth2/token`,
        CLIENT_ID: clientId,
        CLIENT_SECRET_FILE: secretFile,
        LISTEN_PORT: String(port),
        ADMIN_PORT: String(admin),
        LOG_LEVEL: 'info',
        NODE_OPTIONS: productNodeOptions,
        ...productAllocator.env,
        ...(tls ? { CA_FILE: tls.caFile } : {}),
        ...(scenario.basic ? { PASSTHROUGH_BASIC: 'true' } : {}),
        ...extra,
      },
      ready: () => pollOk(`http://127.0.0.1:${admin}/readyz`),
    });
  const [minimal, httpProxy, product, before, bearer] = await Promise.all([
    // The DPoP scenarios hold the product against itself with DPoP off, not against the baselines.
    dpop
      ? undefined
      : startNode(
          BASELINE,
          [...profileFlags(BASELINE), 'bench/baselines/undici-minimal.js', upstreamOrigin, String(minimalPort), staticToken],
          {
            env: tls ? { NODE_EXTRA_CA_CERTS: tls.caFile } : {},
          },
        ),
    // http-proxy is held against the plain-HTTP scenarios only.
    tls || dpop
      ? undefined
      : startNode('http-proxy', [
          ...profileFlags('http-proxy'),
          'bench/baselines/http-proxy.js',
          upstreamOrigin,
          String(httpProxyPort),
          staticToken,
        ]),
    startProduct(PRODUCT, 'dist/main.js', productPort, adminPort, 'bench-client', dpopEnv),
    beforePort ? startProduct(BEFORE, beforeMain, beforePort, beforeAdminPort, 'bench-before', beforeEnv) : undefined,
    dpop ? startProduct(BEARER, 'dist/main.js', bearerPort, bearerAdminPort, 'bench-bearer') : undefined,
  ]);
  if (minimal) minimal.url = `http://127.0.0.1:${minimalPort}`;
  if (httpProxy) httpProxy.url = `http://127.0.0.1:${httpProxyPort}`;
  product.url = `http://127.0.0.1:${productPort}`;
  if (before) before.url = `http://127.0.0.1:${beforePort}`;
  if (bearer) bearer.url = `http://127.0.0.1:${bearerPort}`;
  const fetchesBy = (clientId) => () => tokenService.tokenRequests.slice(tokenFetchesBefore).filter((r) => r.clientId === clientId).length;
  product.tokenFetches = fetchesBy('bench-client');
  if (before) before.tokenFetches = fetchesBy('bench-before');
  if (bearer) bearer.tokenFetches = fetchesBy('bench-bearer');
  return [minimal, httpProxy, product, before, bearer].filter(Boolean);
}

async function runScenario(name, upstreams, tokenService, secretFile) {
  const scenario = SCENARIOS[name];
  if (!scenario) throw new Error(`BENCH_SCENARIOS: unknown scenario ${name} (known: ${Object.keys(SCENARIOS).join(', ')})`);
  const tls = scenario.tls ? await upstreams.tls() : undefined;
  const upstreamOrigin = tls ? tls.origin : upstreams.plain;
  const candidates = await startCandidates(upstreamOrigin, tokenService, secretFile, tls, scenario);
  const samples = Object.fromEntries(candidates.map((c) => [c.name, []]));
  const handshakes = Object.fromEntries(candidates.map((c) => [c.name, 0]));
  const requestsServed = Object.fromEntries(candidates.map((c) => [c.name, 0]));
  const dpopBefore = scenario.dpop ? await upstreams.dpopCounts() : undefined;
  const loadCounted = async (candidate, seconds) => {
    const before = tls ? await tls.handshakes() : 0;
    const result = await load(candidate.url + scenario.path, scenario, seconds);
    if (tls) handshakes[candidate.name] += (await tls.handshakes()) - before;
    requestsServed[candidate.name] += result.requests;
    return result;
  };
  // A candidate whose process died (http-proxy has, under get-1m) is left out of the later rounds
  // and named in the report, rather than ending the whole run.
  const exitedIn = {};
  const cpuMicrosOrExit = (candidate, round) => {
    try {
      return cpuMicros(candidate.pid);
    } catch {
      exitedIn[candidate.name] = round + 1;
      const { exitCode, signalCode } = candidate.child;
      const last = candidate.output().trimEnd().split('\n').slice(-5).join('\n    ');
      process.stderr.write(
        `  ${name} round ${round + 1} ${candidate.name} has exited (${signalCode ?? `code ${exitCode}`}); left out of the later rounds` +
          (last ? `; its last output:\n    ${last}\n` : '\n'),
      );
      return undefined;
    }
  };
  try {
    for (const candidate of candidates) await loadCounted(candidate, warmupS);
    for (let round = 0; round < rounds; round++) {
      for (const candidate of roundOrder(candidates, round)) {
        if (exitedIn[candidate.name] !== undefined) continue;
        const cpuBefore = cpuMicrosOrExit(candidate, round);
        if (cpuBefore === undefined) continue;
        const result = await loadCounted(candidate, durationS);
        const cpuAfter = cpuMicrosOrExit(candidate, round);
        if (cpuAfter === undefined) continue;
        const cpu = cpuAfter - cpuBefore;
        samples[candidate.name].push({ ...result, cpuUsPerRequest: cpu / result.requests });
        process.stderr.write(
          `  ${name} round ${round + 1} ${candidate.name.padEnd(17)} ${result.rps.toFixed(0).padStart(6)} req/s  ` +
            `${(cpu / result.requests).toFixed(1).padStart(6)} µs/req  p99 ${result.p99Ms.toFixed(2)} ms  errors ${result.errors}\n`,
        );
      }
    }
    const summary = {};
    for (const candidate of candidates) {
      const s = samples[candidate.name];
      // Rounds in which a candidate answered nothing (it hung) are counted, not averaged in.
      const served = s.filter((x) => x.requests > 0);
      summary[candidate.name] = {
        rps: median(served.map((x) => x.rps)),
        p50Ms: median(served.map((x) => x.p50Ms)),
        p99Ms: median(served.map((x) => x.p99Ms)),
        cpuUsPerRequest: median(served.map((x) => x.cpuUsPerRequest)),
        peakRssMb: exitedIn[candidate.name] === undefined ? peakRssMb(candidate.pid) : NaN,
        exitedInRound: exitedIn[candidate.name],
        errors: s.reduce((a, x) => a + x.errors, 0),
        stalledRounds: s.length - served.length,
        ...(tls ? { tlsHandshakes: handshakes[candidate.name], requests: requestsServed[candidate.name] } : {}),
        rounds: s,
      };
    }
    for (const candidate of candidates) if (candidate.tokenFetches) summary[candidate.name].tokenFetches = candidate.tokenFetches();
    if (dpopBefore) {
      // Only the product with DPoP on can send proofs: the upstream's counts are its requests.
      const after = await upstreams.dpopCounts();
      summary[PRODUCT].dpop = {
        requests: requestsServed[PRODUCT],
        withProof: after.withProof - dpopBefore.withProof,
        dpopScheme: after.dpopScheme - dpopBefore.dpopScheme,
      };
    }
    // Ratios per round (the machine's speed drifts within a run), then their median.
    // Only the rounds both ran: a candidate that exited has no figures for the rounds after.
    const perRound = (other, key) =>
      samples[PRODUCT].flatMap((x, i) => (samples[other][i] === undefined ? [] : [x[key] / samples[other][i][key]]));
    const ratios = {};
    for (const other of [BEFORE, BEARER, BASELINE, 'http-proxy'].filter((n) => samples[n])) {
      const cpuPerRound = perRound(other, 'cpuUsPerRequest');
      ratios[other] = {
        cpu: median(cpuPerRound),
        cpuInterval: geometricMeanInterval(cpuPerRound),
        rps: median(perRound(other, 'rps')),
        p99: median(perRound(other, 'p99Ms')),
        peakRss: summary[PRODUCT].peakRssMb / summary[other].peakRssMb,
        cpuSpread: cpuPerRound,
      };
    }
    return { scenario: { name, ...scenario }, summary, ratios };
  } finally {
    await Promise.all(candidates.map(stop));
  }
}

function fmt(value, digits = 0) {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

function report(results, machine) {
  const lines = [];
  lines.push(`# ticket-auth-proxy benchmark`, '');
  lines.push(
    `${machine.cpu} × ${machine.cores}, ${machine.memGiB} GiB, Node ${machine.node}, load: ${machine.load}, upstream: ${machine.upstream}, ` +
      `${rounds} rounds × ${durationS} s after ${warmupS} s warm-up${nodeFlags.length ? `, node ${nodeFlags.join(' ')}` : ''}; ` +
      (PIN ? `the proxies pinned to processor ${PROXY_CPU}, the load and the upstream to ${LOAD_CPU}; ` : '') +
      (beforeMain
        ? `"${BEFORE}" is ${beforeMain}, run as the product is${env.BENCH_BEFORE_ENV ? ` but with ${env.BENCH_BEFORE_ENV}` : ''}; `
        : '') +
      `the product with NODE_OPTIONS=${productNodeOptions ? `"${productNodeOptions}"` : '(none)'} and ${productAllocator.description}`,
    '',
  );
  for (const { scenario, summary, ratios } of results) {
    const body = scenario.bodyBytes ? ` (${scenario.bodyBytes / 1024} KB body)` : '';
    lines.push(`## ${scenario.name}: ${scenario.method} ${scenario.path}${body}, ${scenario.connections} connections`, '');
    lines.push('| candidate | req/s | p50 ms | p99 ms | CPU µs/req | peak RSS MB | errors |');
    lines.push('|---|--:|--:|--:|--:|--:|--:|');
    for (const [name, s] of Object.entries(summary)) {
      lines.push(
        `| ${name} | ${fmt(s.rps)} | ${fmt(s.p50Ms, 2)} | ${fmt(s.p99Ms, 2)} | ${fmt(s.cpuUsPerRequest, 1)} | ${fmt(s.peakRssMb)} | ${s.errors} |`,
      );
    }
    for (const [name, s] of Object.entries(summary)) {
      if (s.exitedInRound !== undefined)
        lines.push('', `**${name}'s process exited during round ${s.exitedInRound}**: its figures are of the rounds before.`);
      if (s.stalledRounds)
        lines.push(
          '',
          `**${name} answered no request in ${s.stalledRounds} of ${s.rounds.length} rounds**: it stopped serving; its figures are of the rounds it served.`,
        );
    }
    lines.push('');
    lines.push('| product / | CPU per request | CPU: geometric mean (95 % interval) | req/s | p99 | peak RSS | CPU ratio per round |');
    lines.push('|---|--:|--:|--:|--:|--:|---|');
    for (const [other, r] of Object.entries(ratios)) {
      const interval = `${fmt(r.cpuInterval.mean, 2)} (${fmt(r.cpuInterval.low, 2)}-${fmt(r.cpuInterval.high, 2)})`;
      const spread =
        r.cpuSpread.length > 12
          ? `${r.cpuSpread.length} rounds, ${fmt(Math.min(...r.cpuSpread), 2)}-${fmt(Math.max(...r.cpuSpread), 2)}`
          : r.cpuSpread.map((x) => fmt(x, 2)).join(' ');
      lines.push(`| ${other} | ${fmt(r.cpu, 2)} | ${interval} | ${fmt(r.rps, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.peakRss, 2)} | ${spread} |`);
    }
    const before = summary[BEFORE] ? `; by the build before it: ${summary[BEFORE].tokenFetches}` : '';
    lines.push('', `Token fetches by the product during the scenario: ${summary[PRODUCT].tokenFetches}${before} (one token lifetime).`, '');
    if (scenario.dpop) lines.push(dpopBinding(summary[PRODUCT].dpop), '');
    if (scenario.tls) {
      const counts = Object.entries(summary).map(([n, s]) => `${n} ${s.tlsHandshakes} for ${s.requests} requests`);
      lines.push(`TLS handshakes at the upstream (load: ${scenario.connections} connections): ${counts.join('; ')}.`, '');
    }
  }
  const get1k = results.find((r) => r.scenario.name === 'get-1k');
  if (get1k) {
    const toMin = get1k.ratios[BASELINE];
    const toHttpProxy = get1k.ratios['http-proxy'];
    const verdict = (ok) => (ok ? 'met' : 'NOT met');
    lines.push('## Targets (get-1k)', '');
    lines.push(`- CPU per request ≤ 1.0× ${BASELINE}: ${fmt(toMin.cpu, 2)}× (${verdict(toMin.cpu <= 1.0)})`);
    lines.push(`- req/s ≥ 2× http-proxy: ${fmt(toHttpProxy.rps, 2)}× (${verdict(toHttpProxy.rps >= 2)})`);
    lines.push(`- p99 ≤ 1.1× ${BASELINE}: ${fmt(toMin.p99, 2)}× (${verdict(toMin.p99 <= 1.1)})`);
    lines.push(`- peak RSS ≤ 1.1× ${BASELINE}: ${fmt(toMin.peakRss, 2)}× (${verdict(toMin.peakRss <= 1.1)})`);
    const fetches = results.map((r) => r.summary[PRODUCT].tokenFetches);
    lines.push(`- one token fetch per token lifetime: ${fetches.join(', ')} (${verdict(fetches.every((n) => n === 1))})`);
    lines.push('');
  }
  lines.push(...dpopTargets(results, get1k));
  return lines.join('\n');
}

/** Whether the product's tokens were DPoP-bound: the upstream counted the proofs it received. */
function dpopBinding(counts) {
  const { requests, withProof, dpopScheme } = counts;
  const seen = `The upstream received ${withProof} requests with a DPoP proof and ${dpopScheme} with \`Authorization: DPoP\`, of ${requests} the product forwarded`;
  if (withProof === 0)
    return `${seen}: **the token endpoint issued Bearer tokens, so no proof was signed**; these figures are the Bearer path's with DPOP=on, not DPoP's cost.`;
  // The upstream also counts the requests still in flight when the load generator stopped, which
  // the load generator does not: more proofs than requests is every request.
  return `${seen}${withProof >= requests && dpopScheme >= requests ? '' : ' (**not all of them**)'}: the tokens were DPoP-bound.`;
}

/** The DPoP scenarios against the Bearer path: the product with DPoP off in the same rounds, and get-1k's product. */
function dpopTargets(results, get1k) {
  const dpopResults = results.filter((r) => r.scenario.dpop);
  if (dpopResults.length === 0) return [];
  const lines = ['## Targets (DPoP)', ''];
  const verdict = (ok) => (ok ? 'met' : 'NOT met');
  const bearerGet1k = get1k?.summary[PRODUCT].cpuUsPerRequest;
  for (const { scenario, summary, ratios } of dpopResults) {
    const product = summary[PRODUCT];
    const bound = product.dpop.withProof > 0;
    const toBearer = ratios[BEARER];
    const target =
      scenario.dpop === 'ES256'
        ? ` (target ≤ ${DPOP_CPU_TARGET}× with the default key: ${bound ? verdict(toBearer.cpu <= DPOP_CPU_TARGET) : 'not measured, the tokens were Bearer'})`
        : '';
    lines.push(
      `- ${scenario.name} (${scenario.dpop}${scenario.dpop === 'ES256' ? ', the default generated key' : ''}): CPU per request ${fmt(product.cpuUsPerRequest, 1)} µs`,
    );
    lines.push(
      `  - against the product with DPoP off in the same rounds (${fmt(summary[BEARER].cpuUsPerRequest, 1)} µs): ${fmt(toBearer.cpu, 2)}×${target}`,
    );
    if (bearerGet1k !== undefined)
      lines.push(
        `  - against get-1k's product (Bearer) in this run (${fmt(bearerGet1k, 1)} µs): ${fmt(product.cpuUsPerRequest / bearerGet1k, 2)}×`,
      );
    lines.push(
      `  - peak RSS ${fmt(product.peakRssMb)} MB, ${fmt(toBearer.peakRss, 2)}× the product with DPoP off; req/s ${fmt(toBearer.rps, 2)}×, p99 ${fmt(toBearer.p99, 2)}×`,
    );
    if (!bound) lines.push('  - **the tokens were Bearer: no proof was signed**');
  }
  lines.push('');
  return lines;
}

/**
 * nginx as the upstream, when installed: at ~20 µs per request it leaves the CPU to the proxies.
 * The same routes as bench/upstream.js.
 */
async function startNginx() {
  const port = await freePort();
  const dir = join(work, 'nginx');
  mkdirSync(join(dir, 'www/api/v1'), { recursive: true });
  for (const temp of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp), { recursive: true });
  const list = JSON.stringify({
    items: Array.from({ length: 12 }, (_, i) => ({ id: `T-${1000 + i}`, title: `Printer on floor ${i} is jammed`, status: 'open' })),
  }).padEnd(1024, ' ');
  writeFileSync(join(dir, 'www/api/v1/tickets'), list);
  writeFileSync(join(dir, 'www/api/v1/blob'), Buffer.alloc(1024 * 1024, 'x'));
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000; keepalive_timeout 60s; client_max_body_size 2m;
  default_type application/json;
  # Requests carrying a DPoP proof, one line each ("1" when the scheme is DPoP too), counted by
  # dpopCounts(); buffered, flushed within a second.
  map $http_dpop $has_dpop { "" 0; default 1; }
  map $http_authorization $dpop_scheme { "~^DPoP " 1; default 0; }
  log_format dpop_seen '$dpop_scheme';
  server {
    listen 127.0.0.1:${port};
    root ${dir}/www;
    access_log ${dir}/dpop.log dpop_seen buffer=64k flush=1s if=$has_dpop;
    location /api/v1/ {
      if ($http_authorization !~ "^(Bearer|DPoP) ") { return 401; }
      if ($request_method = POST) { return 201 '{"received":true}'; }
    }
  }
}
`,
  );
  const child = spawn(...pinned(LOAD_CPU, 'nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')]), { stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  const upstream = { name: 'nginx', child, pid: child.pid };
  await pollOk(`http://127.0.0.1:${port}/api/v1/tickets`, 10_000, { authorization: 'Bearer probe' });
  const dpopCounts = async () => {
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the log's flush
    const text = existsSync(join(dir, 'dpop.log')) ? readFileSync(join(dir, 'dpop.log'), 'utf8') : '';
    return { withProof: text.length / 2, dpopScheme: text.split('1').length - 1 };
  };
  return { upstream, origin: `http://127.0.0.1:${port}`, dpopCounts };
}

async function startUpstream() {
  if (upstreamKind === 'nginx') return startNginx();
  const upstream = await startNode('upstream', ['bench/upstream.js', '0']);
  const origin = `http://127.0.0.1:${/ready (\d+)/.exec(upstream.output())[1]}`;
  return { upstream, origin, dpopCounts: async () => (await fetch(`${origin}/__dpop`)).json() };
}

/** An HTTPS upstream, its certificate from a CA made with openssl for this run. */
async function startTlsUpstream() {
  const dir = join(work, 'tls');
  mkdirSync(dir, { recursive: true });
  const ssl = (...args) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  ssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-subj',
    '/CN=bench CA',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  ssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  ssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  );
  const upstream = await startNode('upstream-tls', ['bench/upstream.js', '0'], {
    env: { BENCH_UPSTREAM_TLS_KEY: join(dir, 'server.key'), BENCH_UPSTREAM_TLS_CERT: join(dir, 'server.crt') },
  });
  const origin = `https://127.0.0.1:${/ready (\d+)/.exec(upstream.output())[1]}`;
  const { Agent } = await import('undici');
  const agent = new Agent({ connect: { ca: readFileSync(join(dir, 'ca.crt'), 'utf8') } });
  const { request } = await import('undici');
  const handshakes = async () => Number(await (await request(`${origin}/__handshakes`, { dispatcher: agent })).body.text());
  return { upstream, origin, caFile: join(dir, 'ca.crt'), handshakes, close: () => agent.close() };
}

async function main() {
  const started = Date.now();
  const { upstream, origin: upstreamOrigin, dpopCounts } = await startUpstream();
  let tlsUpstream;
  const upstreams = { plain: upstreamOrigin, tls: async () => (tlsUpstream ??= await startTlsUpstream()), dpopCounts };
  const tokenService = await createMockTicketService({
    clients: { 'bench-client': 'bench-secret', 'bench-before': 'bench-secret', 'bench-bearer': 'bench-secret' },
    tokenTtlS: 3600,
  });
  const secretFile = join(work, 'client-secret');
  writeFileSync(secretFile, 'bench-secret\n', { mode: 0o600 });
  const machine = {
    cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: cpus().length,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.versions.node,
    load: loadTool === 'wrk' ? 'wrk -t1' : 'autocannon (1 worker)',
    upstream: upstreamKind,
  };
  process.stderr.write(
    `bench: ${machine.load} against ${upstreamKind}, ${rounds} rounds × ${durationS} s, scenarios ${scenarioNames.join(', ')}\n`,
  );
  const results = [];
  try {
    for (const name of scenarioNames) results.push(await runScenario(name, upstreams, tokenService, secretFile));
  } finally {
    await stop(upstream);
    if (tlsUpstream) {
      await tlsUpstream.close();
      await stop(tlsUpstream.upstream);
    }
    await tokenService.close();
  }
  const markdown = report(results, machine);
  process.stdout.write(markdown + '\n');
  const dir = join(root, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        machine,
        settings: {
          durationS,
          rounds,
          warmupS,
          pinned: PIN,
          nodeFlags,
          productNodeOptions,
          productAllocator: productAllocator.description,
          before: beforeMain,
        },
        results,
      },
      null,
      2,
    ) + '\n',
  );
  process.stderr.write(`bench: ${((Date.now() - started) / 1000).toFixed(0)} s; results in ${file}\n`);
}

main().catch((err) => {
  console.error(`bench: ${err.message}`);
  process.exit(1);
});
