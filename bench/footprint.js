// npm run bench:footprint: the proxy's footprint beside a bare Node process, against the budgets of docs/performance.md, "What a pod pays for the sidecar".
// Starts on loopback the mock Ticket Service (token endpoint and tickets), a bare
// `node -e 'setInterval(() => {}, 1e3)'` and the product (node dist/main.js, with the image's
// NODE_OPTIONS), side by side on the same Node, and reports:
//   ready    time from spawn to /readyz 200, less one token fetch measured against the same mock
//   idle     RSS holding a token, no traffic, and CPU over the idle window
//   peak     highest RSS (VmHWM) under a burst of load (autocannon, bench/load-autocannon.js)
//   after    RSS a while after the burst
// each as a difference and a ratio to the bare process.
// Settings (environment): FOOTPRINT_IDLE_S (60), FOOTPRINT_BURST_S (10), FOOTPRINT_AFTER_S (60),
// FOOTPRINT_CONNECTIONS (50), FOOTPRINT_MAIN (the product's entry, default dist/main.js), BENCH_PRODUCT_NODE_OPTIONS (default: the Dockerfile's NODE_OPTIONS),
// BENCH_PRODUCT_ALLOCATOR=glibc (default: the Dockerfile's LD_PRELOAD of jemalloc when this host has it).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMockTicketService } from '../dist/mock/ticket-service.js';
import { freePort, imageAllocatorEnv, imageNodeOptions, root } from './processes.js';

const env = process.env;
const idleS = Number(env.FOOTPRINT_IDLE_S ?? 60);
const burstS = Number(env.FOOTPRINT_BURST_S ?? 10);
const afterS = Number(env.FOOTPRINT_AFTER_S ?? 60);
const connections = Number(env.FOOTPRINT_CONNECTIONS ?? 50);
const clockTicks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
const productNodeOptions = env.BENCH_PRODUCT_NODE_OPTIONS ?? imageNodeOptions();
const productAllocator = imageAllocatorEnv(env);
const productMain = env.FOOTPRINT_MAIN ?? join(root, 'dist/main.js');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resident and peak resident memory in MB, from /proc. */
function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

/** CPU seconds (user + system) the process used so far. */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

async function pollOk(url, deadlineMs) {
  while (Date.now() < deadlineMs) {
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(5);
  }
  throw new Error(`${url} not ready in time`);
}

/** One burst in its own process (the mock answers from this one, so it must not block). */
function runLoad(url) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(root, 'bench/load-autocannon.js'), JSON.stringify({ url, seconds: burstS, connections, method: 'GET', bodyBytes: 0 })],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...env, NODE_OPTIONS: '' },
      },
    );
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('error', reject);
    child.once('exit', () => resolve(JSON.parse(out)));
  });
}

const mock = await createMockTicketService({ clients: { 'bench-client': 'bench-secret' }, tokenTtlS: 3600 });
const dir = mkdtempSync(join(tmpdir(), 'footprint-'));
const secretFile = join(dir, 'secret');
writeFileSync(secretFile, 'bench-secret\n');
const listenPort = await freePort();
const adminPort = await freePort();

// One token fetch on a fresh connection: what readiness cannot be faster than.
const fetchStarted = performance.now();
await (
  await fetch(`${mock.url}/api/v1/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', connection: 'close' },
    body: 'grant_type=client_credentials&client_id=bench-client&client_secret=bench-secret',
  })
).arrayBuffer();
const oneFetchMs = performance.now() - fetchStarted;

const bare = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e3)'], { stdio: 'ignore', env: { ...env, NODE_OPTIONS: '' } });
const started = performance.now();
const product = spawn(process.execPath, [productMain], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
  env: {
    ...env,
    NODE_OPTIONS: productNodeOptions,
    ...productAllocator.env,
    BASE_URL: mock.url,
    CLIENT_ID: 'bench-client',
    CLIENT_SECRET_FILE: secretFile,
    LISTEN_PORT: String(listenPort),
    ADMIN_PORT: String(adminPort),
    ADMIN_HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  },
});
try {
  await pollOk(`http://127.0.0.1:${adminPort}/readyz`, Date.now() + 10_000);
  const readyMs = performance.now() - started;

  const cpu0 = { bare: cpuSeconds(bare.pid), product: cpuSeconds(product.pid) };
  await sleep(idleS * 1000);
  const idleCpu = { bare: cpuSeconds(bare.pid) - cpu0.bare, product: cpuSeconds(product.pid) - cpu0.product };
  const idle = { bare: memory(bare.pid), product: memory(product.pid) };

  const load = await runLoad(`http://127.0.0.1:${listenPort}/api/v1/tickets`);
  const peak = { bare: memory(bare.pid), product: memory(product.pid) };
  await sleep(afterS * 1000);
  const after = { bare: memory(bare.pid), product: memory(product.pid) };

  const row = (what, b, p, unit, budget) =>
    `| ${what} | ${b.toFixed(1)} ${unit} | ${p.toFixed(1)} ${unit} | ${p - b >= 0 ? '+' : ''}${(p - b).toFixed(1)} ${unit} | ${b > 0 ? (p / b).toFixed(2) : '-'} | ${budget} |`;
  const lines = [
    `footprint on Node ${process.version}, product NODE_OPTIONS=${productNodeOptions || '(none)'}, ${productAllocator.description}; idle ${idleS} s, burst ${burstS} s x ${connections} connections, after ${afterS} s`,
    '',
    '| measure | bare node | proxy | difference | ratio | budget |',
    '|---|---|---|---|---|---|',
    row('RSS idle, token held', idle.bare.rssMb, idle.product.rssMb, 'MB', '<= bare + 25 MB'),
    row(`RSS ${afterS} s after the burst`, after.bare.rssMb, after.product.rssMb, 'MB', '<= bare + 35 MB'),
    row('peak RSS (VmHWM) under load', peak.bare.hwmMb, peak.product.hwmMb, 'MB', '<= 160 MB'),
    row(`CPU over ${idleS} s idle`, idleCpu.bare * 1000, idleCpu.product * 1000, 'ms', 'not measurable'),
    '',
    `ready: /readyz 200 after ${readyMs.toFixed(0)} ms; one token fetch ${oneFetchMs.toFixed(0)} ms; ready less one fetch ${(readyMs - oneFetchMs).toFixed(0)} ms (budget 300 ms)`,
    `burst: ${load.requests} requests, ${load.rps.toFixed(0)} req/s, p99 ${load.p99Ms} ms, ${load.errors} errors`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  bare.kill();
  product.kill('SIGTERM');
  await new Promise((r) => product.once('exit', r));
  await mock.close();
  rmSync(dir, { recursive: true, force: true });
}
