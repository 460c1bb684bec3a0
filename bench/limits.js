// `node bench/limits.js` (after `npm run build`): what the limits under abuse cost in memory.
//
// Starts on loopback the mock gateway and the product (node dist/main.js, or the build
// LIMITS_MAIN names), then measures the proxy's resident memory (its own
// process_resident_memory_bytes) at rest, holding LIMITS_IDLE (5000) idle keep-alive connections
// that each made one request, while LIMITS_WAITERS (5000) requests wait for a token the token
// endpoint never gives (TOKEN_WAIT_TIMEOUT_MS 5000), and while LIMITS_SLOW_READERS (100) callers
// read a 10 MiB answer slowly (16 KiB every 100 ms, for 10 s): its peak (VmRSS sampled every
// 100 ms) over its rest after one such answer, and that growth per caller, the window each holds.
// Then how long shedding lasts (docs/operations.md, "When memory runs short"), the proxy started
// with the image's node flags and allocator (BENCH_PRODUCT_ALLOCATOR=glibc: glibc's malloc), its
// MEMORY_LIMIT_MB set so that its idle footprint after a warm-up is 80 % of it: after a burst of
// 300 callers of a 32 MiB answer who read nothing and then hang up, the seconds from the hang-up
// to the first 200 (shedAfterBurstS); and with 100 such callers who never read nor hang up, the
// seconds from the first 503 to the first 200 (shedWithStoppedReadersS), which the overload
// action ends. LIMITS_PARTS (idle,waiters,slow,burst,stopped) picks the parts to run.
// Bounded: every step has a deadline; prints one JSON object.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createMockTicketService } from '../dist/mock/ticket-service.js';
import { imageAllocatorEnv, imageNodeOptions } from './processes.js';

const IDLE = Number(process.env.LIMITS_IDLE ?? 5000);
const WAITERS = Number(process.env.LIMITS_WAITERS ?? 5000);
const SLOW_READERS = Number(process.env.LIMITS_SLOW_READERS ?? 100);
const MAIN = process.env.LIMITS_MAIN ?? 'dist/main.js';
const PARTS = new Set((process.env.LIMITS_PARTS ?? 'idle,waiters,slow,burst,stopped').split(','));
const allocator = imageAllocatorEnv(process.env);
const children = new Set();
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));
setTimeout(() => {
  console.error('limits: gave up after 600 s');
  process.exit(1);
}, 600_000).unref();

async function startProxy(gatewayUrl, env = {}, nodeFlags = ['--max-semi-space-size=16', '--expose-gc']) {
  const child = spawn(process.execPath, [...nodeFlags, MAIN], {
    env: {
      PATH: process.env.PATH,
      BASE_URL: gatewayUrl,
      CLIENT_ID: 'c',
      CLIENT_SECRET: 's',
      LISTEN_PORT: '0',
      ADMIN_PORT: '0',
      ADMIN_HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  let out = '';
  return new Promise((resolve) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /"proxy":\{"host":"[^"]+","port":(\d+)\},"admin":\{"host":"[^"]+","port":(\d+)\}/.exec(out);
      if (m && !child.ports) {
        child.ports = { proxy: Number(m[1]), admin: Number(m[2]) };
        resolve(child);
      }
    });
  });
}
const rss = async (p) =>
  Number(/^process_resident_memory_bytes (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${p.ports.admin}/metrics`)).text())[1]);
const mb = (b) => Math.round(b / 1048576);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function request(port, keep) {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => resolve({ s, status: 0 }));
    s.once('data', (d) => resolve({ s, status: Number(String(d).slice(9, 12)) }));
    s.write(`GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\n${keep ? '' : 'Connection: close\r\n'}\r\n`);
  });
}

const result = {};
if (PARTS.has('idle')) {
  const gw = await createMockTicketService({ clients: { c: 's' } });
  const p = await startProxy(gw.url);
  while ((await fetch(`http://127.0.0.1:${p.ports.admin}/readyz`)).status !== 200) await sleep(50);
  await request(p.ports.proxy, false);
  await sleep(1000);
  result.restRssMB = mb(await rss(p));
  const held = [];
  for (let i = 0; i < IDLE; i += 500)
    held.push(...(await Promise.all(Array.from({ length: Math.min(500, IDLE - i) }, () => request(p.ports.proxy, true)))));
  await sleep(1000);
  result.idleConnections = held.filter((h) => h.status === 200).length;
  result.idleRssMB = mb(await rss(p));
  result.idleKBPerConnection = Math.round(((result.idleRssMB - result.restRssMB) * 1024) / IDLE);
  const t0 = Date.now();
  const fresh = await request(p.ports.proxy, false);
  result.newCallerWhileIdleHeld = { status: fresh.status, ms: Date.now() - t0 };
  held.forEach((h) => h.s.destroy());
  p.kill();
  await gw.close();
}
if (PARTS.has('waiters')) {
  const gw = await createMockTicketService({ clients: { c: 's' } });
  gw.setTokenFault({ kind: 'hang', times: Infinity });
  const p = await startProxy(gw.url, { TOKEN_WAIT_TIMEOUT_MS: '5000' });
  await sleep(500);
  result.noTokenRestRssMB = mb(await rss(p));
  const pending = [];
  for (let i = 0; i < WAITERS; i += 500) {
    pending.push(...Array.from({ length: Math.min(500, WAITERS - i) }, () => request(p.ports.proxy, false)));
    await sleep(20);
  }
  await sleep(1500);
  result.waiters = WAITERS;
  result.waitingRssMB = mb(await rss(p));
  result.waitingKBPerRequest = Math.round(((result.waitingRssMB - result.noTokenRestRssMB) * 1024) / WAITERS);
  const answers = await Promise.all(pending);
  const counts = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  result.waiterAnswers = counts;
  result.forwardedWithoutToken = gw.apiRequests.length;
  answers.forEach((a) => a.s.destroy());
  p.kill();
  await gw.close();
}
if (PARTS.has('slow')) {
  const gw = await createMockTicketService({ clients: { c: 's' } });
  const p = await startProxy(gw.url);
  const big = `/api/v1/download?bytes=${10 * 1024 * 1024}`;
  while ((await fetch(`http://127.0.0.1:${p.ports.admin}/readyz`)).status !== 200) await sleep(50);
  await (await fetch(`http://127.0.0.1:${p.ports.proxy}${big}`)).arrayBuffer();
  await sleep(1000);
  result.slowRestRssMB = mb(await rss(p));
  const vmRss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p.pid}/status`, 'utf8'))[1]) * 1024;
  let peak = vmRss();
  const sample = setInterval(() => (peak = Math.max(peak, vmRss())), 100);
  const readers = Array.from({ length: SLOW_READERS }, () => {
    const s = connect(p.ports.proxy, '127.0.0.1');
    s.on('error', () => {});
    s.write(`GET ${big} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    return s;
  });
  let read = 0;
  const reading = setInterval(() => {
    for (const s of readers) read += (s.read(16 * 1024) ?? s.read())?.length ?? 0;
  }, 100);
  await sleep(10_000);
  clearInterval(reading);
  clearInterval(sample);
  result.slowReaders = SLOW_READERS;
  result.slowPeakRssMB = mb(peak);
  result.slowGrowthMB = mb(peak) - result.slowRestRssMB;
  result.slowWindowKBPerReader = Math.round((peak - result.slowRestRssMB * 1048576) / SLOW_READERS / 1024);
  result.slowReadMBPerReader = Math.round((read / SLOW_READERS / 1048576) * 10) / 10;
  readers.forEach((s) => s.destroy());
  p.kill();
  await gw.close();
}
if (PARTS.has('burst') || PARTS.has('stopped')) {
  result.allocator = allocator.description;
  const imageFlags = imageNodeOptions().split(' ').filter(Boolean);
  const gw = await createMockTicketService({ clients: { c: 's' } });
  const env = { ...allocator.env, ...(process.env.GLIBC_TUNABLES ? { GLIBC_TUNABLES: process.env.GLIBC_TUNABLES } : {}) };
  const tickets = async (p) => {
    const r = await fetch(`http://127.0.0.1:${p.ports.proxy}/api/v1/tickets`).catch(() => undefined);
    await r?.arrayBuffer();
    return r?.status ?? 0;
  };
  const until = async (p, status, deadlineMs) => {
    const end = Date.now() + deadlineMs;
    while (Date.now() < end) {
      if ((await tickets(p)) === status) return Date.now();
      await sleep(100);
    }
    return undefined;
  };
  const warmUp = async (p) => {
    while ((await fetch(`http://127.0.0.1:${p.ports.admin}/readyz`)).status !== 200) await sleep(50);
    for (let i = 0; i < 3; i++) await (await fetch(`http://127.0.0.1:${p.ports.proxy}/api/v1/download?bytes=${4 * 1048576}`)).arrayBuffer();
  };
  const probe = await startProxy(gw.url, { ...env, MEMORY_LIMIT_MB: '0' }, imageFlags);
  await warmUp(probe);
  const limitMb = Math.ceil((await rss(probe)) / 0.8 / 1048576);
  probe.kill();
  result.shedLimitMB = limitMb;
  const callers = (p, n) =>
    Array.from({ length: n }, () => {
      const s = connect(p.ports.proxy, '127.0.0.1');
      s.on('error', () => {});
      s.write(`GET /api/v1/download?bytes=${32 * 1048576} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      return s;
    });
  const secs = (from, to) => (to === undefined ? 'over 120' : Math.round((to - from) / 100) / 10);
  if (PARTS.has('burst')) {
    const p = await startProxy(gw.url, { ...env, MEMORY_LIMIT_MB: String(limitMb) }, imageFlags);
    await warmUp(p);
    const burst = callers(p, 300);
    const shed = await until(p, 503, 30_000);
    burst.forEach((s) => s.destroy());
    const over = Date.now();
    result.burstShed = shed !== undefined;
    result.shedAfterBurstS = shed === undefined ? 'never shed' : secs(over, await until(p, 200, 120_000));
    p.kill();
  }
  if (PARTS.has('stopped')) {
    const p = await startProxy(gw.url, { ...env, MEMORY_LIMIT_MB: String(limitMb) }, imageFlags);
    await warmUp(p);
    const started = Date.now();
    const stopped = callers(p, 100);
    const shed = await until(p, 503, 30_000);
    result.stoppedReadersShed = shed !== undefined;
    if (shed !== undefined) {
      const served = await until(p, 200, 120_000);
      result.shedWithStoppedReadersS = secs(shed, served);
      result.stoppedReadersToServedS = secs(started, served);
    }
    result.overloadResets = Number(
      /^ticket_auth_proxy_overload_reset_total (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${p.ports.admin}/metrics`)).text())?.[1],
    );
    stopped.forEach((s) => s.destroy());
    p.kill();
  }
  await gw.close();
}
console.log(JSON.stringify(result));
process.exit(0);
