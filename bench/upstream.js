// The benchmark's gateway stand-in: as little work per request as Node allows, so that the
// proxies in front of it are what the figures measure. Serves a ~1 KB JSON list, accepts POSTs
// (drained, answered with their length) and serves 1 MB bodies. Refuses calls without a Bearer.
//   node bench/upstream.js [port]     prints `ready <port>` once listening
import { createServer } from 'node:http';

const list = Buffer.from(
  JSON.stringify({
    items: Array.from({ length: 12 }, (_, i) => ({ id: `T-${1000 + i}`, title: `Printer on floor ${i} is jammed`, status: 'open' })),
  }).padEnd(1024, ' '),
);
const megabyte = Buffer.alloc(1024 * 1024, 'x');
const jsonHeaders = { 'content-type': 'application/json', 'content-length': String(list.length) };
const blobHeaders = { 'content-type': 'application/octet-stream', 'content-length': String(megabyte.length) };

const server = createServer((req, res) => {
  if (!req.headers.authorization?.startsWith('Bearer ')) {
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
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(`ready ${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
