// The gateway stand-ins the candidates forward to: nginx when installed (about 20 µs of CPU per
// request, so the proxies in front of it are what the figures measure), else bench/upstream.js;
// and for the HTTPS scenarios bench/upstream.js over TLS, with a CA made with openssl for the run.
// Each serves the same routes, refuses calls without a Bearer or DPoP token, and counts the
// requests that carry a DPoP proof: `{ origin, caFile?, dpopCounts(), handshakes?(), stop() }`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../processes.js';
import { pollOk } from './children.js';

/**
 * Starts the plain-HTTP upstream BENCH_UPSTREAM names.
 *
 * @param kind 'nginx' or 'node'
 * @param run `{ children, workDir }`
 */
export function startUpstream(kind, run) {
  return kind === 'nginx' ? startNginx(run) : startNodeUpstream(run);
}

/** nginx with the routes of bench/upstream.js; DPoP proofs counted in a log of one character a request. */
async function startNginx({ children, workDir }) {
  const port = await freePort();
  const dir = join(workDir, 'nginx');
  mkdirSync(join(dir, 'www/api/v1'), { recursive: true });
  for (const temp of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp), { recursive: true });
  const list = JSON.stringify({
    items: Array.from({ length: 12 }, (_, i) => ({ id: `T-${1000 + i}`, title: `Printer on floor ${i} is jammed`, status: 'open' })),
  }).padEnd(1024, ' ');
  writeFileSync(join(dir, 'www/api/v1/tickets'), list);
  writeFileSync(join(dir, 'www/api/v1/blob'), Buffer.alloc(1024 * 1024, 'x'));
  writeFileSync(join(dir, 'www/received.json'), '{"received":true}');
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
  keepalive_requests 1000000; keepalive_timeout 60s; client_max_body_size 2m; client_body_buffer_size 2m;
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
      if ($request_method = POST) { rewrite ^ /__post last; }
    }
    # A POST is answered 201 once its whole body is read, as an API that stores an upload answers: the
    # mirror reads it first (mirror_request_body), the static handler refuses a POST (405), and
    # error_page turns that into the 201. nginx's return directive would answer before the body arrived.
    location = /__post { internal; mirror /__drop; mirror_request_body on; try_files /received.json =404; error_page 405 =201 /received.json; }
    location = /__drop { internal; return 204; }
  }
}
`,
  );
  const child = children.start('load', 'nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  await pollOk(`http://127.0.0.1:${port}/api/v1/tickets`, 10_000, { authorization: 'Bearer probe' });
  const dpopCounts = async () => {
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the log's flush
    const text = existsSync(join(dir, 'dpop.log')) ? readFileSync(join(dir, 'dpop.log'), 'utf8') : '';
    return { withProof: text.length / 2, dpopScheme: text.split('1').length - 1 };
  };
  return { origin: `http://127.0.0.1:${port}`, dpopCounts, stop: () => children.stop({ child }) };
}

/** bench/upstream.js over plain HTTP. */
async function startNodeUpstream({ children }) {
  const upstream = await children.startNode('upstream', ['bench/upstream.js', '0'], { role: 'load' });
  const origin = `http://127.0.0.1:${/ready (\d+)/.exec(upstream.output())[1]}`;
  return { origin, dpopCounts: async () => (await fetch(`${origin}/__dpop`)).json(), stop: () => children.stop(upstream) };
}

/** bench/upstream.js over HTTPS, its certificate from a CA made with openssl for this run; it counts its TLS handshakes. */
export async function startTlsUpstream({ children, workDir }) {
  const dir = join(workDir, 'tls');
  mkdirSync(dir, { recursive: true });
  const ssl = (...args) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  const ca = [
    '-subj',
    '/CN=bench CA',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  ];
  ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', ...ca);
  ssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  const signed = ['-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'ext.cnf'];
  ssl('x509', '-req', '-in', 'server.csr', ...signed);
  const upstream = await children.startNode('upstream-tls', ['bench/upstream.js', '0'], {
    role: 'load',
    env: { BENCH_UPSTREAM_TLS_KEY: join(dir, 'server.key'), BENCH_UPSTREAM_TLS_CERT: join(dir, 'server.crt') },
  });
  const origin = `https://127.0.0.1:${/ready (\d+)/.exec(upstream.output())[1]}`;
  const { Agent, request } = await import('undici');
  const agent = new Agent({ connect: { ca: readFileSync(join(dir, 'ca.crt'), 'utf8') } });
  const get = async (path) => (await request(`${origin}${path}`, { dispatcher: agent })).body;
  return {
    origin,
    caFile: join(dir, 'ca.crt'),
    handshakes: async () => Number(await (await get('/__handshakes')).text()),
    dpopCounts: async () => (await get('/__dpop')).json(),
    stop: async () => {
      await agent.close();
      await children.stop(upstream);
    },
  };
}
