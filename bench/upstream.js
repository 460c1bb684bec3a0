// The benchmark's gateway stand-in: as little work per request as Node allows, so that the
// proxies in front of it are what the figures measure. Serves a ~1 KB JSON list, accepts POSTs
// (drained, answered with their length) and serves 1 MB bodies. Refuses calls without a Bearer or
// DPoP token (the proof is not verified: its cost is the proxy's, not the gateway's); GET /__dpop
// answers how many requests carried a DPoP proof and how many the DPoP scheme.
//   node bench/upstream.js [port]     prints `ready <port>` once listening
// With BENCH_UPSTREAM_TLS_KEY and BENCH_UPSTREAM_TLS_CERT (PEM files) it serves HTTPS and answers
// GET /__handshakes with the number of TLS handshakes so far (keep-alive checks).
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';

const list = Buffer.from(
  JSON.stringify({
    items: Array.from({ length: 12 }, (_, i) => ({ id: `T-${1000 + i}`, title: `Printer on floor ${i} is jammed`, status: 'open' })),
  }).padEnd(1024, ' '),
);
const megabyte = Buffer.alloc(1024 * 1024, 'x');
const jsonHeaders = { 'content-type': 'application/json', 'content-length': String(list.length) };
const blobHeaders = { 'content-type': 'application/octet-stream', 'content-length': String(megabyte.length) };

const tls = process.env.BENCH_UPSTREAM_TLS_KEY
  ? { key: readFileSync(process.env.BENCH_UPSTREAM_TLS_KEY), cert: readFileSync(process.env.BENCH_UPSTREAM_TLS_CERT) }
  : undefined;
let handshakes = 0;
const dpop = { withProof: 0, dpopScheme: 0 };
const handler = (req, res) => {
  if (req.url === '/__handshakes') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end(String(handshakes));
    return;
  }
  if (req.url === '/__dpop') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(dpop));
    return;
  }
  const authorization = req.headers.authorization ?? '';
  if (req.headers.dpop !== undefined) {
    dpop.withProof++;
    if (authorization.startsWith('DPoP ')) dpop.dpopScheme++;
  }
  if (!authorization.startsWith('Bearer ') && !authorization.startsWith('DPoP ')) {
    res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
    return;
  }
  if (req.method === 'POST') {
    let received = 0;
    req.on('data', (chunk) => (received += chunk.length));
    req.on('end', () => {
      const body = `{"received":${received}}`;
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': String(body.length) }).end(body);
    });
    return;
  }
  if (req.url === '/api/v1/blob') res.writeHead(200, blobHeaders).end(megabyte);
  else res.writeHead(200, jsonHeaders).end(list);
};
const server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
server.on('secureConnection', () => handshakes++);
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(`ready ${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
