// `node bench/limits.js` (after `npm run build`): what the limits under abuse cost in memory.
//
// Starts on loopback the mock gateway and the product (node dist/main.js, or the build
// LIMITS_MAIN names), then measures the proxy's resident memory (its own
// process_resident_memory_bytes) at rest, holding LIMITS_IDLE (5000) idle keep-alive connections
// that each made one request, while LIMITS_WAITERS (5000) requests wait for a token the token
// endpoint never gives (TOKEN_WAIT_TIMEOUT_MS 5000), and while LIMITS_SLOW_READERS (100) callers
// read a 10 MiB answer slowly (16 KiB every 100 ms, for 10 s): its peak (VmRSS sampled every
// 100 ms) over its rest after one such answer, and that growth per caller, the window each holds.
// Bounded: every step has a deadline; prints one JSON object.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createMockTicketService } from '../dist/mock/ticket-service.js';

const IDLE = Number(process.env.LIMITS_IDLE ?? 5000);
const WAITERS = Number(process.env.LIMITS_WAITERS ?? 5000);
const SLOW_READERS = Number(process.env.LIMITS_SLOW_READERS ?? 100);
const MAIN = process.env.LIMITS_MAIN ?? 'dist/main.js';
const children = new Set();
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));
setTimeout(() => {
  console.error('limits: gave up after 180 s');
  process.exit(1);
}, 180_000).unref();

async function startProxy(gatewayUrl, env = {}) {
  const child = spawn(process.execPath, ['--max-semi-space-size=16', '--expose-gc', MAIN], {
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
{
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
{
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
{
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
console.log(JSON.stringify(result));
process.exit(0);
