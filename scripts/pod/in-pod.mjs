// What runs inside the pod, each a `node -e` program: the image has neither a shell nor curl.
// Each prints one JSON line.

/**
 * The app: `count` GETs of /api/v1/tickets through the socket at $TICKETS_SOCKET (when set) and
 * over $TICKETS_BASE_URL (when it names a TCP port); prints [{ via, status, workspace }].
 */
export const APP_CALLS = `
const http = require('node:http');
const count = Number(process.argv[1]);
const get = (options) => new Promise((resolve) => {
  const req = http.get({ path: '/api/v1/tickets', ...options }, (res) => {
    let body = '';
    res.setEncoding('utf8').on('data', (c) => (body += c)).on('end', () => {
      let workspace;
      try { workspace = JSON.parse(body).workspace; } catch {}
      resolve({ status: res.statusCode, workspace });
    });
  });
  req.on('error', (err) => resolve({ status: 0, error: err.code ?? err.message }));
});
(async () => {
  const out = [];
  const url = new URL(process.env.TICKETS_BASE_URL);
  const agent = new http.Agent({ keepAlive: true });
  for (let i = 0; i < count; i++) {
    if (process.env.TICKETS_SOCKET) out.push({ via: 'socket', ...(await get({ socketPath: process.env.TICKETS_SOCKET, agent })) });
    if (url.port !== '') out.push({ via: 'tcp', ...(await get({ host: url.hostname, port: url.port, agent })) });
  }
  console.log(JSON.stringify(out));
})();
`;

/** Connects to the socket at argv[1]; prints { connected } or { error } (its code). */
export const CONNECT = `
const s = require('node:net').connect(process.argv[1]);
s.on('connect', () => { console.log(JSON.stringify({ connected: true })); s.destroy(); });
s.on('error', (err) => console.log(JSON.stringify({ error: err.code })));
`;

/** A GET of argv[1] over TCP; prints { status } or { error }. */
export const FETCH = `
fetch(process.argv[1]).then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.text() })),
  (err) => console.log(JSON.stringify({ error: err.cause?.code ?? err.message })));
`;

/** Writes to the root filesystem; prints { written } or { error }. */
export const WRITE_ROOT = `
try { require('node:fs').writeFileSync('/pod-check-probe', 'x'); console.log(JSON.stringify({ written: true })); }
catch (err) { console.log(JSON.stringify({ error: err.code })); }
`;

/** The file at argv[1]: { mode, gid, socket } or { error }. */
export const STAT = `
try { const s = require('node:fs').lstatSync(process.argv[1]);
  console.log(JSON.stringify({ mode: (s.mode & 0o7777).toString(8).padStart(4, '0'), uid: s.uid, gid: s.gid, socket: s.isSocket() })); }
catch (err) { console.log(JSON.stringify({ error: err.code })); }
`;

/**
 * A request in flight while the proxy stops: a POST with Expect: 100-continue through the socket
 * at $TICKETS_SOCKET or over $TICKETS_BASE_URL, under the path prefix argv[2] (a route's mount);
 * once the proxy has taken it (100 Continue), prints "in flight", waits argv[1] ms (the proxy is
 * being stopped meanwhile), sends the body, and prints { status } or { error }.
 */
export const IN_FLIGHT = `
const http = require('node:http');
const url = new URL(process.env.TICKETS_BASE_URL);
const body = Buffer.alloc(1024, 'x');
const target = process.env.TICKETS_SOCKET ? { socketPath: process.env.TICKETS_SOCKET } : { host: url.hostname, port: url.port };
const req = http.request({ ...target, method: 'POST', path: (process.argv[2] ?? '') + '/api/v1/upload',
  headers: { expect: '100-continue', 'content-type': 'application/octet-stream', 'content-length': body.length } }, (res) => {
  res.resume().on('end', () => console.log(JSON.stringify({ status: res.statusCode })));
});
req.on('continue', () => { console.log('in flight'); setTimeout(() => req.end(body), Number(process.argv[1])); });
req.on('error', (err) => console.log(JSON.stringify({ error: err.code ?? err.message })));
`;

/**
 * The app's calls along the routes: `count` GETs of each target of the JSON list argv[2]
 * ({ route, socketPath } or { route, port }, and the path), one after another on keep-alive
 * connections; prints [{ route, status, workspace, code }] (the tickets' workspace, or the code of
 * a problem the proxy answered).
 */
export const ROUTE_CALLS = `
const http = require('node:http');
const count = Number(process.argv[1]);
const targets = JSON.parse(process.argv[2]);
const agent = new http.Agent({ keepAlive: true });
const get = ({ route, socketPath, port, path }) => new Promise((resolve) => {
  const where = socketPath ? { socketPath } : { host: '127.0.0.1', port };
  const req = http.get({ ...where, path, agent }, (res) => {
    let body = '';
    res.setEncoding('utf8').on('data', (c) => (body += c)).on('end', () => {
      let parsed = {};
      try { parsed = JSON.parse(body); } catch {}
      resolve({ route, status: res.statusCode, workspace: parsed.workspace, code: parsed.code });
    });
  });
  req.on('error', (err) => resolve({ route, status: 0, error: err.code ?? err.message }));
});
(async () => {
  const out = [];
  for (let i = 0; i < count; i++) for (const target of targets) out.push(await get(target));
  console.log(JSON.stringify(out));
})();
`;

/**
 * A gateway of the routes form: the mock Ticket Service of the image (dist/mock), on port argv[1]
 * of the pod's loopback under the path prefix argv[2], its own identity provider, knowing one
 * client ($GATEWAY_CLIENT_ID, $GATEWAY_CLIENT_SECRET). Prints a JSON line for each call it serves
 * ({ api, tokenValid }) and each token request ({ token: clientId, issued }): its record, read
 * back from its logs. Never a token or a secret.
 */
export const GATEWAY = `
import('/app/dist/mock/ticket-service.js').then(async ({ createMockTicketService }) => {
  const [port, prefix] = process.argv.slice(1);
  const clients = { [process.env.GATEWAY_CLIENT_ID]: process.env.GATEWAY_CLIENT_SECRET };
  const mock = await createMockTicketService({ host: '127.0.0.1', port: Number(port), pathPrefix: prefix, clients, tokenTtlS: 3600 });
  mock.events.on('request', (r) => console.log(JSON.stringify({ api: r.method + ' ' + r.url, tokenValid: r.tokenValid })));
  mock.events.on('token', (r) => console.log(JSON.stringify({ token: r.clientId ?? null })));
  process.on('SIGTERM', () => mock.close().then(() => process.exit(0)));
  console.log(JSON.stringify({ listening: mock.url }));
});
`;
