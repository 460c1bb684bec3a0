// `npm run soak`: the proxy under steady load and scheduled faults for SOAK_MINUTES (30; 2 for a
// quick look), sampled from outside every 5 s, judged, and drawn (bench/SOAK.md).
//
// Starts on loopback the mock gateway (tokens of 20 s) and the product as a user starts it
// (node dist/main.js, secret from a file); loads it at SOAK_RATE (200) requests a second: GETs
// on keep-alive and on fresh connections, 64 KB POSTs, 5 MB downloads read slowly, callers
// that abort midway; and injects faults on a schedule: token endpoint 503 and hang windows, a
// rejected secret then a rotated one (the secret file changes), gateway 401s, resets, slow
// headers past UPSTREAM_TIMEOUT_MS, the gateway down. Writes bench/results/soak-<time>.json and
// .svg and prints one verdict line. Bounded: stops by itself; at most SOAK_MAX_INFLIGHT (400)
// requests in flight.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createMockTicketService } from '../dist/mock/ticket-service.js';
import { imageAllocatorEnv, imageNodeOptions } from './processes.js';
import { drawSoak } from './soak-chart.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const RATE = Number(process.env.SOAK_RATE ?? 200);
const MAX_INFLIGHT = Number(process.env.SOAK_MAX_INFLIGHT ?? 400);
const SAMPLE_MS = 5000;
const UPSTREAM_TIMEOUT_MS = 2000;
const TOKEN_TTL_S = 20;
const RUN_S = MINUTES * 60;
/** A non-2xx up to this long after a fault window ends is still the fault's (backoff up to 30 s, plus the wait). */
const GRACE_S = 40;

const work = mkdtempSync(join(tmpdir(), 'tap-soak-'));
const secretFile = join(work, 'client-secret');
writeFileSync(secretFile, 'soak-secret-1\n');
let proxy;
process.on('exit', () => {
  proxy?.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
const hardStop = setTimeout(
  () => {
    console.error('soak: did not finish in time; stopping');
    process.exit(1);
  },
  (RUN_S + 120) * 1000,
);
hardStop.unref();

const gateway = await createMockTicketService({ clients: { soak: 'soak-secret-1' }, tokenTtlS: TOKEN_TTL_S });
// As the image runs it: its NODE_OPTIONS and its allocator (jemalloc where this host has it).
const allocator = imageAllocatorEnv();
proxy = spawn(process.execPath, [join(root, 'dist/main.js')], {
  env: {
    PATH: process.env.PATH,
    NODE_OPTIONS: imageNodeOptions(),
    ...allocator.env,
    BASE_URL: gateway.url,
    CLIENT_ID: 'soak',
    CLIENT_SECRET_FILE: secretFile,
    LISTEN_HOST: '127.0.0.1',
    LISTEN_PORT: '0',
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
    TOKEN_FETCH_TIMEOUT_MS: '2000',
    TOKEN_WAIT_TIMEOUT_MS: '2000',
    LOG_LEVEL: 'info',
    // The soak charts the heap total, external memory and handles: prom-client's full set.
    METRICS_RUNTIME: 'full',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let exited = null;
proxy.on('exit', (code, signal) => (exited = { code, signal }));
proxy.stderr.resume();
const ports = await new Promise((resolve, reject) => {
  let out = '';
  proxy.stdout.on('data', (d) => {
    out += d;
    const m = /"proxy":\{"host":"[^"]+","port":(\d+)\},"admin":\{"host":"[^"]+","port":(\d+)\}/.exec(out);
    if (m) resolve({ proxy: Number(m[1]), admin: Number(m[2]) });
    if (out.length > 1e6) out = '';
  });
  proxy.on('exit', () => reject(new Error(`proxy exited at start:\n${out}`)));
});
const start = Date.now();
const t = () => (Date.now() - start) / 1000;

// --- faults ---------------------------------------------------------------------------------

let secretGeneration = 1;
const scale = Math.min(1, RUN_S / 1800);
const len = (s) => Math.max(6, Math.round(s * scale));
/** Each: name, start (s), length (s), begin and end actions, the statuses/causes it explains. */
const FAULTS = [
  {
    name: 'token endpoint 503',
    len: len(45),
    explains: ['503 token_unavailable'],
    begin: () => gateway.setTokenFault({ status: 503, body: { error: 'temporarily_unavailable' }, times: Infinity }),
    end: () => gateway.clearTokenFaults(),
  },
  {
    name: 'gateway 401',
    len: len(20),
    explains: ['401'],
    begin: () => gateway.rejectAllTokens(true),
    end: () => gateway.rejectAllTokens(false),
  },
  {
    name: 'token endpoint hangs',
    len: len(45),
    explains: ['503 token_unavailable'],
    begin: () => gateway.setTokenFault({ kind: 'hang', times: Infinity }),
    end: () => gateway.clearTokenFaults(),
  },
  // A reset after the request went out is `upstream_disconnected` (the gateway may have acted);
  // one before it, `upstream_unreachable`. A GET is sent once more first, and meets the reset again.
  {
    name: 'gateway resets',
    len: len(20),
    explains: ['502 upstream_disconnected', '502 upstream_unreachable', 'error'],
    begin: () => gateway.setApiFault({ kind: 'reset' }),
    end: () => gateway.setApiFault(undefined),
  },
  // Each time: the IdP takes a new secret, and the secret file catches up when the window ends.
  {
    name: 'secret rejected, then rotated',
    len: len(45),
    explains: ['503 token_unavailable'],
    begin: () => gateway.setClientSecret('soak', `soak-secret-${secretGeneration + 1}`),
    end: () => writeFileSync(secretFile, `soak-secret-${++secretGeneration}\n`),
  },
  {
    name: 'slow gateway headers',
    len: len(20),
    explains: ['504 upstream_timeout'],
    begin: () => gateway.setApiFault({ kind: 'delay', ms: UPSTREAM_TIMEOUT_MS + 1000 }),
    end: () => gateway.setApiFault(undefined),
  },
  // The token endpoint lives on the gateway: a token that runs out while it is down is this fault's too.
  {
    name: 'gateway down',
    len: len(30),
    explains: ['502 upstream_unreachable', '503 token_unavailable', 'error'],
    begin: () => gateway.setDown(true),
    end: () => gateway.setDown(false),
  },
];
// The first sixth is the baseline, the last sixth recovery. In a run of 10 minutes or more every
// fault comes twice: a first round before a third of the run, a second spread over the judged
// span (the last two thirds). A first visit of a fault path sizes the allocator and V8's heap to
// what it needs; a leak shows as growth across the second visits, which the slope judges.
const rounds =
  RUN_S >= 600
    ? [
        [RUN_S / 12, RUN_S / 3],
        [RUN_S / 3, (RUN_S * 5) / 6],
      ]
    : [[RUN_S / 6, (RUN_S * 5) / 6]];
const SCHEDULE = rounds.flatMap(([from, to], round) =>
  FAULTS.map((f, i) => ({
    ...f,
    name: rounds.length > 1 ? `${f.name} (${round + 1})` : f.name,
    start: Math.round(from + (i * (to - from)) / FAULTS.length),
  })),
);
const windows = [];
for (const f of SCHEDULE) {
  setTimeout(() => {
    f.begin();
    windows.push({ name: f.name, from: t(), to: undefined, explains: f.explains });
  }, f.start * 1000);
  setTimeout(
    () => {
      f.end();
      windows.find((w) => w.name === f.name).to = t();
    },
    (f.start + f.len) * 1000,
  );
}

// --- load -----------------------------------------------------------------------------------

const keepAlive = new Agent({ keepAlive: true, maxSockets: 64 });
const POST_BODY = Buffer.alloc(64 * 1024, 'p');
const results = { done: 0, ok: 0, aborted: 0, skipped: 0, latencies: [], nonOk: [] };
let inflight = 0;
/** Connections the callers hold to the proxy (each one fd in the proxy). */
let callerSockets = 0;
let perSecond = [];

function call(kind) {
  if (inflight >= MAX_INFLIGHT) {
    results.skipped++;
    return;
  }
  inflight++;
  const began = performance.now();
  const opts = {
    host: '127.0.0.1',
    port: ports.proxy,
    agent: kind === 'fresh' ? false : keepAlive,
    method: 'GET',
    path: '/api/v1/tickets',
  };
  if (kind === 'post')
    Object.assign(opts, {
      method: 'POST',
      path: '/api/v1/upload',
      headers: { 'content-type': 'application/octet-stream', 'content-length': POST_BODY.length },
    });
  if (kind === 'download') Object.assign(opts, { path: `/api/v1/download?bytes=${5 * 1024 * 1024}`, agent: false });
  if (kind === 'abort') Object.assign(opts, { path: `/api/v1/download?bytes=${5 * 1024 * 1024}`, agent: false });
  let finished = false;
  const finish = (status, cause) => {
    if (finished) return;
    finished = true;
    inflight--;
    results.done++;
    if (status === 'aborted') {
      results.aborted++;
      return;
    }
    if (status >= 200 && status < 300) {
      results.ok++;
      // Latency of the quick calls; a slow reader's download takes as long as it reads.
      if (kind !== 'download') perSecond.push(performance.now() - began);
    } else results.nonOk.push({ at: t(), kind, status, cause });
  };
  const req = request(opts, (res) => {
    let body = '';
    let got = 0;
    res.on('data', (c) => {
      got += c.length;
      if (res.statusCode >= 300 && body.length < 2000) body += c;
      if (kind === 'abort' && got > 1024 * 1024) {
        req.destroy();
        finish('aborted');
      }
      if (kind === 'download') {
        // A slow reader: about 2 MB/s.
        res.pause();
        setTimeout(() => res.resume(), Math.ceil(c.length / 2048));
      }
    });
    res.on('end', () => {
      const code = /"code":"([a-z_]+)"/.exec(body)?.[1];
      finish(res.statusCode, code ? `${res.statusCode} ${code}` : String(res.statusCode));
    });
    res.on('error', (err) => finish(0, `error ${err.code ?? err.message}`));
    res.on('aborted', () => finish(0, 'error response aborted'));
  });
  req.on('error', (err) => finish(0, `error ${err.code ?? err.message}`));
  req.on('socket', (s) => {
    if (s.counted) return;
    s.counted = true;
    callerSockets++;
    s.on('close', () => callerSockets--);
  });
  req.setTimeout(30_000, () => req.destroy(new Error('caller timeout')));
  req.end(kind === 'post' ? POST_BODY : undefined);
}

const MIX = [
  ...Array(70).fill('get'),
  ...Array(15).fill('fresh'),
  ...Array(12).fill('post'),
  ...Array(1).fill('download'),
  ...Array(2).fill('abort'),
];
let tick = 0;
const loader = setInterval(() => {
  if (t() >= RUN_S) return;
  // RATE a second in ticks of 10 ms, the mix in a fixed rotation.
  const n = Math.floor(((tick + 1) * RATE) / 100) - Math.floor((tick * RATE) / 100);
  for (let i = 0; i < n; i++) call(MIX[(tick * 7 + i * 13) % MIX.length]);
  tick++;
}, 10);

// --- samples --------------------------------------------------------------------------------

const samples = [];
let lastDone = 0;
async function sample() {
  const at = t();
  let m = {};
  try {
    const text = await (await fetch(`http://127.0.0.1:${ports.admin}/metrics`)).text();
    for (const line of text.split('\n')) {
      const mm = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
      if (mm && !(mm[1] in m)) m[mm[1]] = Number(mm[2]);
    }
  } catch {
    m = {};
  }
  let fds = NaN;
  try {
    fds = readdirSync(`/proc/${proxy.pid}/fd`).length;
  } catch {
    // the process is gone: the verdict says so
  }
  const lat = perSecond.sort((a, b) => a - b);
  perSecond = [];
  const q = (p) => (lat.length ? Math.round(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] * 10) / 10 : null);
  samples.push({
    t: Math.round(at),
    rssMB: m.process_resident_memory_bytes / 1048576,
    heapMB: m.nodejs_heap_size_used_bytes / 1048576,
    heapTotalMB: m.nodejs_heap_size_total_bytes / 1048576,
    externalMB: m.nodejs_external_memory_bytes / 1048576,
    fds,
    handles: m.nodejs_active_handles_total,
    loopP99ms: m.nodejs_eventloop_lag_p99_seconds * 1000,
    upstream: gateway.openConnections(),
    callers: callerSockets,
    otherFds: fds - callerSockets - gateway.openConnections(),
    rate: (results.done - lastDone) / (SAMPLE_MS / 1000),
    p50ms: q(0.5),
    p99ms: q(0.99),
    startTime: m.process_start_time_seconds,
    inflight,
  });
  lastDone = results.done;
  // The mock keeps every request; tally what the verdict needs and let the rest go.
  for (const r of gateway.apiRequests.splice(0)) if (r.tokenExpired) expiredSeen++;
  gateway.tokenRequests.splice(0);
}
let expiredSeen = 0;
const sampler = setInterval(sample, SAMPLE_MS);
await sample();

await new Promise((resolve) => setTimeout(resolve, RUN_S * 1000));
clearInterval(loader);
// Let the last callers finish (bounded by their own 30 s timeout).
for (let i = 0; i < 60 && inflight > 0; i++) await new Promise((r) => setTimeout(r, 500));
// Then quiet: the proxy gives back what the load needed (memory-release.ts, after 10 s without a
// request). What it still holds beyond its idle size at the start is what the run left behind.
await sample();
const QUIET_S = 25;
await new Promise((r) => setTimeout(r, QUIET_S * 1000));
clearInterval(sampler);
await sample();

// --- verdict --------------------------------------------------------------------------------

const slope = (key) => {
  const xs = samples.filter((s) => s.t >= RUN_S / 3 && Number.isFinite(s[key]));
  const n = xs.length;
  if (n < 3) return { perMin: 0, growth: 0, mean: 0 };
  const mx = xs.reduce((a, s) => a + s.t, 0) / n;
  const my = xs.reduce((a, s) => a + s[key], 0) / n;
  const b = xs.reduce((a, s) => a + (s.t - mx) * (s[key] - my), 0) / xs.reduce((a, s) => a + (s.t - mx) ** 2, 0);
  return { perMin: b * 60, growth: b * (xs[n - 1].t - xs[0].t), mean: my };
};
const verdicts = [];
const check = (ok, text) => verdicts.push({ ok, text });
const rss = slope('rssMB');
const heap = slope('heapMB');
// Each caller and upstream connection is one fd; how many the callers keep is their choice, so
// the slope is judged on the fds besides connections (the raw count is drawn and its peak reported).
const fds = slope('otherFds');
// Tolerance: over the last two thirds, growth by the fitted slope within 10 % of the mean (RSS, heap) and within 10 fds.
check(
  rss.growth <= Math.max(8, rss.mean * 0.1),
  `RSS slope ${rss.perMin.toFixed(3)} MB/min (growth ${rss.growth.toFixed(1)} MB over the last two thirds; tolerance 10 % of ${rss.mean.toFixed(0)} MB)`,
);
check(
  heap.growth <= Math.max(4, heap.mean * 0.1),
  `heap slope ${heap.perMin.toFixed(3)} MB/min (growth ${heap.growth.toFixed(1)} MB; tolerance 10 % of ${heap.mean.toFixed(0)} MB)`,
);
check(fds.growth <= 10, `slope of fds besides connections ${fds.perMin.toFixed(2)}/min (growth ${fds.growth.toFixed(1)}; tolerance 10)`);
const idleStart = samples[0].rssMB;
const quietEnd = samples.at(-1).rssMB;
check(
  quietEnd <= idleStart + 35,
  `RSS ${QUIET_S} s after the load: ${quietEnd.toFixed(0)} MB against ${idleStart.toFixed(0)} MB idle at the start (tolerance + 35 MB, the footprint budget's allowance after a burst)`,
);
const base = samples.filter((s) => s.t >= 5 && s.t <= SCHEDULE[0].start);
const median = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? NaN;
const baseFds = median(base.map((s) => s.otherFds));
const baseUp = median(base.map((s) => s.upstream));
for (const w of windows) {
  const after = samples.filter((s) => s.t >= (w.to ?? RUN_S) + 10 && s.t <= (w.to ?? RUN_S) + 40);
  // fds less one per caller connection and per upstream connection: what nothing explains.
  const back = after.some((s) => s.otherFds <= baseFds + 5 && s.upstream <= baseUp * 1.5 + 10);
  check(
    back,
    `after "${w.name}": fds and upstream connections back to baseline (${baseFds} fds besides connections, ${baseUp} upstream; within + 5 / 1.5x + 10)`,
  );
}
check(expiredSeen === 0, `requests reaching the gateway with an expired token: ${expiredSeen}`);
const explained = (r) =>
  windows.some((w) => r.at >= w.from - 1 && r.at <= (w.to ?? RUN_S) + GRACE_S && w.explains.some((e) => r.cause.startsWith(e)));
const unexplained = results.nonOk.filter((r) => !explained(r));
const causes = {};
for (const r of results.nonOk) causes[r.cause] = (causes[r.cause] ?? 0) + 1;
check(
  unexplained.length === 0,
  `non-2xx answers: ${results.nonOk.length}, unexplained by a fault: ${unexplained.length}${unexplained.length ? ` (first: ${JSON.stringify(unexplained.slice(0, 3))})` : ''}`,
);
const starts = new Set(samples.map((s) => s.startTime).filter(Number.isFinite));
check(exited === null && starts.size === 1, `proxy restarts: ${exited === null ? starts.size - 1 : 'exited ' + JSON.stringify(exited)}`);

const pass = verdicts.every((v) => v.ok);
const stamp = new Date(start).toISOString().replace(/[:.]/g, '-');
mkdirSync(join(root, 'bench/results'), { recursive: true });
const base_ = join(root, 'bench/results', `soak-${stamp}`);
const peak = (k) => Math.max(...samples.map((s) => s[k]).filter(Number.isFinite));
const summary = {
  minutes: MINUTES,
  rate: RATE,
  nodeOptions: imageNodeOptions(),
  allocator: allocator.description,
  requests: results.done,
  ok: results.ok,
  aborted: results.aborted,
  skipped: results.skipped,
  nonOk: results.nonOk.length,
  causes,
  expiredSeen,
  windows,
  peaks: {
    rssMB: peak('rssMB'),
    heapMB: peak('heapMB'),
    fds: peak('fds'),
    handles: peak('handles'),
    loopP99ms: peak('loopP99ms'),
    upstream: peak('upstream'),
  },
  slopes: { rssMBPerMin: rss.perMin, heapMBPerMin: heap.perMin, fdsPerMin: fds.perMin },
  baseline: { fds: baseFds, upstream: baseUp },
  rss: { idleStartMB: idleStart, quietEndMB: quietEnd },
  verdicts,
  pass,
};
writeFileSync(`${base_}.json`, JSON.stringify({ summary, samples, nonOk: results.nonOk }, null, 1));
writeFileSync(
  `${base_}.svg`,
  drawSoak(samples, windows, { title: `ticket-auth-proxy soak: ${MINUTES} min at ${RATE} req/s, ${pass ? 'PASS' : 'FAIL'}` }),
);
console.log(`the proxy ran with NODE_OPTIONS=${imageNodeOptions() || '(none)'} and ${allocator.description}`);
for (const v of verdicts) console.log(`${v.ok ? 'ok  ' : 'FAIL'} ${v.text}`);
console.log(`samples and chart: ${base_}.json, ${base_}.svg`);
console.log(
  `SOAK ${pass ? 'PASS' : 'FAIL'}: ${MINUTES} min, ${results.done} requests (${results.ok} 2xx, ${results.nonOk.length} non-2xx all ${unexplained.length ? 'NOT ' : ''}explained by faults, ${results.aborted} aborted by callers), ` +
    `RSS ${rss.perMin.toFixed(2)} MB/min, heap ${heap.perMin.toFixed(2)} MB/min, fds ${fds.perMin.toFixed(2)}/min over the last two thirds; ` +
    `peaks RSS ${summary.peaks.rssMB.toFixed(0)} MB, fds ${summary.peaks.fds}; RSS idle ${idleStart.toFixed(0)} MB at the start, ${quietEnd.toFixed(0)} MB ${QUIET_S} s after the load; ${expiredSeen} expired tokens at the gateway; ${starts.size - 1} restarts`,
);
proxy.kill('SIGTERM');
await gateway.close().catch(() => {});
process.exit(pass ? 0 : 1);
