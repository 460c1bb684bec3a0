// What most Node projects reach for: http-proxy 1.18 with a keep-alive agent and a static Bearer.
//   node bench/baselines/http-proxy.js <upstream origin> <port> <token>
import { Agent, createServer } from 'node:http';
import httpProxy from 'http-proxy';

const [, , upstream, port, token] = process.argv;
// The token goes in `headers`, set when the upstream request is made: set from a 'proxyReq' listener,
// it threw ERR_HTTP_HEADERS_SENT (and ended the process) when a caller went away at the wrong moment.
const proxy = httpProxy.createProxyServer({
  target: upstream,
  agent: new Agent({ keepAlive: true, maxSockets: 256 }),
  headers: { authorization: `Bearer ${token}` },
});
proxy.on('error', (_err, _req, res) => {
  if (!res.headersSent) res.writeHead(502).end();
  else res.destroy();
});

const server = createServer((req, res) => proxy.web(req, res));
server.listen(Number(port), '127.0.0.1', () => console.log(`ready ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
