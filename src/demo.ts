/**
 * `npm run demo`: the embedded mock of the Ticket Service on loopback and the proxy in front of it,
 * started as a user starts it (`node dist/main.js`), with the curl line to try. Ctrl-C stops both.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createMockTicketService, DEMO_CLIENT } from './mock/ticket-service.js';

const CLIENT_ID = DEMO_CLIENT.id;
const CLIENT_SECRET = DEMO_CLIENT.secret;
const LISTEN_PORT = process.env.LISTEN_PORT ?? '8180';
const ADMIN_PORT = process.env.ADMIN_PORT ?? '8181';

const mock = await createMockTicketService({ clients: { [CLIENT_ID]: CLIENT_SECRET }, tokenTtlS: 60 });
const proxy = spawn(process.execPath, [fileURLToPath(new URL('./main.js', import.meta.url))], {
  stdio: ['ignore', 'pipe', 'inherit'],
  // Its own process group: a terminal's Ctrl-C reaches the demo only, which stops the proxy once.
  detached: true,
  env: {
    PATH: process.env.PATH,
    BASE_URL: mock.url,
    CLIENT_ID,
    CLIENT_SECRET,
    LISTEN_PORT,
    ADMIN_PORT,
    ADMIN_HOST: '127.0.0.1',
    ACCESS_LOG: 'true',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  },
});

let shown = false;
let buffered = '';
proxy.stdout.setEncoding('utf8');
proxy.stdout.on('data', (chunk: string) => {
  process.stdout.write(chunk);
  if (shown) return;
  buffered += chunk;
  if (buffered.includes('"token fetched"') && buffered.includes('"listeners up"')) {
    shown = true;
    buffered = '';
    process.stdout.write(
      `\nMock Ticket Service at ${mock.url} (60 s tokens for ${CLIENT_ID}); the proxy listens on 127.0.0.1:${LISTEN_PORT}.\n` +
        `Try, in another terminal:\n\n` +
        `  curl -s http://127.0.0.1:${LISTEN_PORT}/api/v1/tickets\n\n` +
        `Metrics: curl -s http://127.0.0.1:${ADMIN_PORT}/metrics | grep ticket_auth_proxy\n` +
        `Ctrl-C stops both.\n\n`,
    );
  }
});

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  proxy.kill('SIGTERM');
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
process.on('exit', () => {
  if (proxy.exitCode === null) proxy.kill('SIGKILL');
});
proxy.on('exit', (code) => {
  void mock.close().then(() => process.exit(stopping ? 0 : (code ?? 1)));
});
