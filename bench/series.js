// npm run bench:series: the series one proxy exports, by profile, for docs/operations.md, "Series per pod".
// Starts on loopback the mock Ticket Service and, for each profile, the product (node
// dist/main.js) holding a token, counts the sample lines of /metrics idle and after traffic (GET
// and POST answered 200, a gateway 404, a proxy 404), and prints one table row per profile with
// what 10,000 such pods cost a Prometheus at about 2 KiB a series. With a token store: a real
// redis-server on loopback (skipped, and said, when there is none), first with the token fetched
// by this proxy, then taken from the store (a second proxy started beside the first).
// Settings (environment): SERIES_PODS (10000).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMockTicketService } from '../dist/mock/ticket-service.js';
import { freePort, root, until } from './processes.js';

const pods = Number(process.env.SERIES_PODS ?? 10_000);
const SECRET = 'series-secret';

/** A proxy started with `env` over the defaults, ready; its admin and proxy URLs, and how to stop it. */
async function proxy(gateway, env) {
  const [port, adminPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [join(root, 'dist/main.js')], {
    env: {
      PATH: process.env.PATH,
      BASE_URL: gateway.url,
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      LISTEN_PORT: String(port),
      ADMIN_PORT: String(adminPort),
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: 'ignore',
  });
  const admin = `http://127.0.0.1:${adminPort}`;
  await until(async () => (await fetch(`${admin}/readyz`)).status === 200, 'the proxy ready');
  return {
    url: `http://127.0.0.1:${port}`,
    admin,
    stop: () => new Promise((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', resolve), child.kill('SIGTERM')))),
  };
}

/** The sample lines of one scrape. */
async function series(p) {
  const text = await (await fetch(`${p.admin}/metrics`)).text();
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
}

async function traffic(p) {
  for (const [method, path] of [
    ['GET', '/api/v1/tickets'],
    ['POST', '/api/v1/tickets'],
    ['GET', '/api/v1/no-such-thing'],
    ['GET', '/elsewhere'],
  ]) {
    const res = await fetch(`${p.url}${path}`, { method, body: method === 'POST' ? '{"title":"x"}' : undefined });
    await res.arrayBuffer();
  }
}

/** A redis-server of its own on loopback, or undefined when none is installed. */
async function redis() {
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'series-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir], { stdio: 'ignore' });
  await until(() => spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG', 'redis-server');
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const row = (profile, idle, busy) =>
  `| ${profile} | ${idle} | ${busy} | about ${(Math.round((busy * pods) / 1000) * 1000).toLocaleString('en')} series, ${((busy * pods * 2) / 1024 / 1024).toFixed(1)} GiB |`;

const gateway = await createMockTicketService({ clients: { client: SECRET }, tokenTtlS: 3600 });
const store = await redis();
const rows = [];
try {
  for (const runtime of ['essential', 'full']) {
    const p = await proxy(gateway, { METRICS_RUNTIME: runtime });
    const idle = await series(p);
    await traffic(p);
    rows.push(row(`\`METRICS_RUNTIME=${runtime}\``, idle, await series(p)));
    await p.stop();
    if (store === undefined) continue;
    // With a store: the first proxy fetches and shares the token; the second takes it from the store.
    const env = {
      METRICS_RUNTIME: runtime,
      TOKEN_STORE_URL: store.url,
      ALLOW_INSECURE_HTTP: 'true',
      TOKEN_STORE_PREFIX: `series-${runtime}:`,
    };
    const fetched = await proxy(gateway, env);
    const adopted = await proxy(gateway, env);
    for (const [p, how] of [
      [fetched, 'the token fetched'],
      [adopted, 'the token taken from the store'],
    ]) {
      const idleStore = await series(p);
      await traffic(p);
      rows.push(row(`\`${runtime}\`, with a token store, ${how}`, idleStore, await series(p)));
    }
    await fetched.stop();
    await adopted.stop();
  }
} finally {
  store?.stop();
  await gateway.close();
}

process.stdout.write(
  `Series per pod, Node ${process.versions.node} (npm run bench:series)${store === undefined ? '; no redis-server here: the store rows are missing' : ''}:\n\n` +
    `| profile | idle | after GET and POST traffic | ${pods.toLocaleString('en')} pods after traffic |\n|---|---|---|---|\n${rows.join('\n')}\n`,
);
