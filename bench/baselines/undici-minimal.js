// The floor for a Node proxy: undici's Pool.stream with a static Bearer, nothing else.
//   node bench/baselines/undici-minimal.js <upstream origin> <port> <token>
import { createServer } from 'node:http';
import { Pool } from 'undici';

const [, , upstream, port, token] = process.argv;
const pool = new Pool(upstream, { keepAliveTimeout: 60_000 });
const authorization = `Bearer ${token}`;

const server = createServer((req, res) => {
  const headers = { ...req.headers, authorization };
  delete headers.host;
  delete headers.connection;
  const body = req.method === 'GET' || req.method === 'HEAD' ? null : req;
  pool.stream(
    { path: req.url, method: req.method, headers, body, opaque: res },
    ({ statusCode, headers, opaque }) => opaque.writeHead(statusCode, headers),
    (err) => {
      if (err && !res.headersSent) res.writeHead(502).end();
      else if (err) res.destroy();
    },
  );
});
server.listen(Number(port), '127.0.0.1', () => console.log(`ready ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
