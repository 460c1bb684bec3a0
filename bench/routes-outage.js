// node bench/routes-outage.js (after npm run build): what one route's identity-provider outage
// costs another route's callers (docs/routes.md, "Isolation").
// Starts on loopback two mock Ticket Services, each its own identity provider and gateway, and the
// product with two routes: `eu` mounted on the main listener, `us` on a port of its own. Loads the
// `us` route with autocannon (bench/load-autocannon.js, a process of its own) in three phases of
// ROUTES_OUTAGE_S seconds: both providers well; the eu provider down (every token request 503, the
// eu token revoked) with the eu route loaded meanwhile by callers that all get 503 token_unavailable;
// both well again. Prints the us route's throughput and latency in each phase.
// Settings (environment): ROUTES_OUTAGE_S (5), ROUTES_OUTAGE_CONNECTIONS (20).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMockTicketService } from '../dist/mock/ticket-service.js';
import { freePort, root } from './processes.js';

const seconds = Number(process.env.ROUTES_OUTAGE_S ?? 5);
const connections = Number(process.env.ROUTES_OUTAGE_CONNECTIONS ?? 20);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function load(url) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(root, 'bench/load-autocannon.js'), JSON.stringify({ url, seconds, connections, method: 'GET', bodyBytes: 0 })],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load exited ${code}`))));
  });
}

const eu = await createMockTicketService({ clients: { 'eu-app': 'eu-secret' }, tokenTtlS: 3600 });
const us = await createMockTicketService({ clients: { 'us-app': 'us-secret' }, tokenTtlS: 3600 });
const [main, usPort, admin] = [await freePort(), await freePort(), await freePort()];
const file = join(mkdtempSync(join(tmpdir(), 'routes-outage-')), 'proxy.yaml');
writeFileSync(
  file,
  [
    'tokenWaitTimeoutMs: 1000',
    'routes:',
    '  - name: eu',
    '    mount: /eu',
    `    baseUrl: ${eu.url}`,
    '    clientId: eu-app',
    '    clientSecret: eu-secret',
    '  - name: us',
    `    listenPort: ${usPort}`,
    `    baseUrl: ${us.url}`,
    '    clientId: us-app',
    '    clientSecret: us-secret',
    '',
  ].join('\n'),
);
const proxy = spawn(process.execPath, [join(root, 'dist/main.js')], {
  env: { PATH: process.env.PATH, CONFIG_FILE: file, LISTEN_PORT: String(main), ADMIN_PORT: String(admin), LOG_LEVEL: 'warn' },
  stdio: 'ignore',
});
try {
  for (let i = 0; ; i++) {
    if (i > 500) throw new Error('the proxy was not ready');
    try {
      if ((await fetch(`http://127.0.0.1:${admin}/readyz`)).status === 200) break;
    } catch {
      // not yet
    }
    await sleep(20);
  }
  const usUrl = `http://127.0.0.1:${usPort}/api/v1/tickets`;
  const euUrl = `http://127.0.0.1:${main}/eu/api/v1/tickets`;
  const rows = [];
  rows.push(['both identity providers well', await load(usUrl)]);
  eu.setTokenFault({ status: 503, times: Infinity });
  eu.revokeAll();
  // The eu route's token is refused once: from then on its callers wait for a token that cannot be had.
  await (await fetch(euUrl)).arrayBuffer();
  const [during, onEu] = await Promise.all([load(usUrl), load(euUrl)]);
  rows.push(['the eu provider down, its route loaded', during]);
  eu.clearTokenFaults();
  await sleep(2000);
  rows.push(['both well again', await load(usUrl)]);
  process.stdout.write(
    `# One route's outage, seen from the other (node bench/routes-outage.js, Node ${process.versions.node})\n\n` +
      `The us route under ${connections} connections for ${seconds} s a phase; meanwhile, in the second phase, the eu route under ` +
      `${connections} more, answered ${onEu.errors} times of ${onEu.requests} with an error (503 token_unavailable).\n\n` +
      '| phase | us req/s | us p50 ms | us p99 ms | us errors |\n|---|--:|--:|--:|--:|\n' +
      rows.map(([phase, r]) => `| ${phase} | ${Math.round(r.rps)} | ${r.p50Ms} | ${r.p99Ms} | ${r.errors} |`).join('\n') +
      '\n',
  );
} finally {
  proxy.kill('SIGTERM');
  await eu.close();
  await us.close();
}
