/**
 * `npm run demo`: the embedded mock of the Ticket Service on loopback and the proxy in front of it,
 * started as the image starts it (`node dist/main.js` with the image's `NODE_OPTIONS`), with the
 * curl line to try. Ctrl-C stops both.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { listenProblems } from './app/listeners/port-probe.js';
import { createLogger } from './core/log.js';
import { createMockTicketService, DEMO_CLIENT } from './mock/ticket-service.js';

const CLIENT_ID = DEMO_CLIENT.id;
const CLIENT_SECRET = DEMO_CLIENT.secret;
/** The image's V8 flags (the Dockerfile's `NODE_OPTIONS`; docs/performance.md, "Memory settings"). */
const IMAGE_NODE_OPTIONS = '--max-semi-space-size=16 --expose-gc';
const LISTEN_PORT = process.env.LISTEN_PORT ?? '8180';
const ADMIN_PORT = process.env.ADMIN_PORT ?? '8181';

/** The demo's listeners on loopback: the proxy's and the admin listener. */
const loopback = (proxyPort: number, adminPort: number) => [
  { what: 'the proxy listener (LISTEN_PORT)', host: '127.0.0.1', port: proxyPort },
  { what: 'the admin listener (ADMIN_PORT)', host: '127.0.0.1', port: adminPort },
];

/**
 * Both ports are tried before anything starts: a port taken is said with the way out, as
 * `npm run mock` says it for MOCK_PORT, suggesting ports free at this moment. A value that is no
 * port is left to the proxy's own configuration message.
 */
async function refuseTakenPorts(): Promise<void> {
  const ports = [Number(LISTEN_PORT), Number(ADMIN_PORT)] as const;
  if (!ports.every((p) => Number.isInteger(p) && p >= 0 && p <= 65535)) return;
  const quiet = createLogger('silent');
  const problems = await listenProblems(loopback(...ports), quiet);
  if (problems.every((p) => p === undefined)) return;
  for (const problem of problems) if (problem !== undefined) process.stderr.write(`demo: ${problem.message}\n`);
  let free = 9180;
  for (const candidate of [9180, 10180, 18180, 28180]) {
    if ((await listenProblems(loopback(candidate, candidate + 1), quiet)).every((p) => p === undefined)) {
      free = candidate;
      break;
    }
  }
  process.stderr.write(`demo: choose other ports: LISTEN_PORT=${free} ADMIN_PORT=${free + 1} npm run demo\n`);
  process.exit(1);
}

await refuseTakenPorts();
const mock = await createMockTicketService({
  clients: { [CLIENT_ID]: CLIENT_SECRET },
  tokenTtlS: 60,
  log: (line) => process.stdout.write(line),
});
const proxy = spawn(process.execPath, [fileURLToPath(new URL('./main.js', import.meta.url))], {
  stdio: ['ignore', 'pipe', 'inherit'],
  // Its own process group: a terminal's Ctrl-C reaches the demo only, which stops the proxy once.
  detached: true,
  env: {
    PATH: process.env.PATH,
    NODE_OPTIONS: IMAGE_NODE_OPTIONS,
    BASE_URL: mock.url,
    CLIENT_ID,
    CLIENT_SECRET,
    LISTEN_PORT,
    ADMIN_PORT,
    ADMIN_HOST: '127.0.0.1',
    ACCESS_LOG: 'true',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    // To try a scope: the mock grants tickets.read and tickets.write, and refuses any other.
    ...(process.env.TOKEN_SCOPE === undefined ? {} : { TOKEN_SCOPE: process.env.TOKEN_SCOPE }),
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
