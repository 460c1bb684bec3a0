/**
 * `npm run demo`: the embedded mock of the Ticket Service on loopback and the proxy in front of it,
 * started as the image starts it (`node dist/main.js` with the image's `NODE_OPTIONS`), with the
 * curl line to try. Ctrl-C stops both.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { listenProblems } from './app/listeners/port-probe.js';
import { createLogger, type Log } from './core/log.js';
import { createMockTicketService, DEMO_CLIENT } from './mock/ticket-service.js';

const CLIENT_ID = DEMO_CLIENT.id;
const CLIENT_SECRET = DEMO_CLIENT.secret;
/** The image's V8 flags (the Dockerfile's `NODE_OPTIONS`; docs/performance.md, "Memory settings"). */
const IMAGE_NODE_OPTIONS = '--max-semi-space-size=16 --expose-gc';
const LISTEN_PORT = process.env.LISTEN_PORT ?? '8180';
const ADMIN_PORT = process.env.ADMIN_PORT ?? '8181';

/** The demo's listeners on loopback, each with the setting that moves it. */
const LISTENERS = [
  { setting: 'LISTEN_PORT', what: 'the proxy listener' },
  { setting: 'ADMIN_PORT', what: 'the admin listener' },
] as const;

const onLoopback = (ports: readonly number[]) =>
  LISTENERS.map((l, i) => ({ what: `${l.what} (${l.setting})`, host: '127.0.0.1', port: ports[i]! }));

/**
 * Both ports are tried before anything starts. A port taken is said with the listener it is for,
 * the setting that moves it, and a command to copy that moves only what must move, to ports free
 * at this moment (with `MOCK_PORT` on the same port, that `npm run mock` may be what holds it); two
 * listeners given one port are said as such. A value that is no port is left to the proxy's own
 * configuration message.
 */
async function refuseTakenPorts(): Promise<void> {
  const ports = [Number(LISTEN_PORT), Number(ADMIN_PORT)];
  if (!ports.every((p) => Number.isInteger(p) && p >= 0 && p <= 65535)) return;
  const quiet = createLogger('silent');
  const problems = await listenProblems(onLoopback(ports), quiet);
  if (problems.every((p) => p === undefined)) return;
  const shared = ports[0] !== 0 && ports[0] === ports[1];
  // The listeners to move: each whose port is taken; of two on one port, the admin listener.
  const move = LISTENERS.map((_, i) => problems[i] !== undefined);
  if (shared) {
    process.stderr.write(
      `demo: LISTEN_PORT and ADMIN_PORT are both ${ports[0]}: the proxy listener and the admin listener cannot share a port; ` +
        'move the admin listener with ADMIN_PORT\n',
    );
  }
  for (const [i, problem] of problems.entries()) {
    // Of two listeners on one port, the second finds it held by the first: said above.
    if (problem === undefined || (shared && i === 1)) continue;
    const { setting, what } = LISTENERS[i]!;
    const mock =
      process.env.MOCK_PORT === String(ports[i])
        ? `; MOCK_PORT is ${ports[i]} too: if npm run mock holds it, stop it or give it another MOCK_PORT`
        : '';
    process.stderr.write(`demo: ${problem.message}: port ${ports[i]} is taken by another process; move ${what} with ${setting}${mock}\n`);
  }
  const moved = await freePortsFor(ports, move, quiet);
  const given = (i: number): boolean => move[i]! || process.env[LISTENERS[i]!.setting] !== undefined;
  const assignments = LISTENERS.flatMap((l, i) => (given(i) ? [`${l.setting}=${moved[i]!}`] : []));
  process.stderr.write(`demo: for example: ${assignments.join(' ')} npm run demo\n`);
  process.exit(1);
}

/** `ports` with each listener to move given a port free now (beside the ones kept), from a few candidates. */
async function freePortsFor(ports: readonly number[], move: readonly boolean[], quiet: Log): Promise<number[]> {
  for (const candidate of [9180, 10180, 18180, 28180]) {
    const tried = ports.map((p, i) => (move[i] ? candidate + i : p));
    if ((await listenProblems(onLoopback(tried), quiet)).every((p) => p === undefined)) return tried;
  }
  return ports.map((p, i) => (move[i] ? 9180 + i : p));
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

/**
 * The banner, once the listeners are up and the first fetch has ended either way: a refused
 * fetch (a scope the mock does not grant) still shows where to try, with what is wrong, from the
 * proxy's own log line: the reason, and the setting its hint names.
 */
function banner(failure: { reason?: unknown; hint?: unknown } | undefined): string {
  const wrong =
    failure === undefined
      ? ''
      : `The proxy holds no token yet: ${String(failure.reason)}${failure.hint === undefined ? '' : `; ${String(failure.hint)}`}.\n` +
        'Until it gets one, the curl line is answered 503 token_unavailable (after waiting up to 5 s, TOKEN_WAIT_TIMEOUT_MS); ' +
        'the proxy keeps trying, and logs each attempt.\n';
  return (
    `\nMock Ticket Service at ${mock.url} (60 s tokens for ${CLIENT_ID}); the proxy listens on 127.0.0.1:${LISTEN_PORT}.\n` +
    wrong +
    `Try, in another terminal:\n\n` +
    `  curl -s http://127.0.0.1:${LISTEN_PORT}/api/v1/tickets\n\n` +
    `Metrics: curl -s http://127.0.0.1:${ADMIN_PORT}/metrics | grep ticket_auth_proxy\n` +
    `Ctrl-C stops both.\n\n`
  );
}

let shown = false;
let listening = false;
/** How the first fetch ended: with a token (no failure), or refused (the log line that says so). */
let firstFetch: { failure?: { reason?: unknown; hint?: unknown } } | undefined;
let partial = '';
proxy.stdout.setEncoding('utf8');
proxy.stdout.on('data', (chunk: string) => {
  process.stdout.write(chunk);
  if (shown) return;
  const lines = (partial + chunk).split('\n');
  partial = lines.pop()!;
  for (const line of lines) {
    let entry: { msg?: unknown; reason?: unknown; hint?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.msg === 'listeners up') listening = true;
    if (entry.msg === 'token fetched') firstFetch ??= {};
    if (entry.msg === 'token fetch failed') firstFetch ??= { failure: entry };
  }
  if (listening && firstFetch !== undefined) {
    shown = true;
    partial = '';
    process.stdout.write(banner(firstFetch.failure));
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
