/**
 * `npm run mock`: the embedded mock of the Ticket Service on its own, on a fixed loopback port,
 * for trying `check`, a configuration file or a secret file against it. It prints its
 * URL, the demo client's id and secret, and the lines that point a proxy at it. Ctrl-C stops it.
 */
import { createMockTicketService, DEMO_CLIENT } from './ticket-service.js';

const USAGE = `Usage: npm run mock [-- --help]
       node dist/mock/main.js [--help]

The mock Ticket Service alone, on loopback: a token endpoint issuing short-lived tokens to the demo
client, its issuer metadata (/.well-known/oauth-authorization-server), and a tickets endpoint that
refuses a request without a valid token. It prints its URL, the demo client's id and secret, and
the lines that point a proxy at it. Ctrl-C stops it.

Settings, from the environment:
  MOCK_HOST         the address to listen on (default 127.0.0.1)
  MOCK_PORT         the port to listen on (default 8080; 0 for any free one)
  MOCK_TOKEN_TTL_S  the lifetime of the tokens it issues, in seconds (default 60)
`;

for (const arg of process.argv.slice(2)) {
  if (arg === '--help' || arg === '-h') {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  process.stderr.write(
    `mock: unknown argument ${JSON.stringify(arg)}: it takes its settings from the environment (MOCK_PORT=9080 npm run mock); see --help\n`,
  );
  process.exit(2);
}

const host = process.env.MOCK_HOST ?? '127.0.0.1';
const port = Number(process.env.MOCK_PORT ?? 8080);
const ttlS = Number(process.env.MOCK_TOKEN_TTL_S ?? 60);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`mock: MOCK_PORT must be a port number (got ${JSON.stringify(process.env.MOCK_PORT)})\n`);
  process.exit(2);
}
if (!Number.isInteger(ttlS) || ttlS < 1) {
  process.stderr.write(`mock: MOCK_TOKEN_TTL_S must be a whole number of seconds (got ${JSON.stringify(process.env.MOCK_TOKEN_TTL_S)})\n`);
  process.exit(2);
}

let mock;
try {
  mock = await createMockTicketService({ host, port, tokenTtlS: ttlS, log: (line) => process.stdout.write(line) });
} catch (err) {
  const code = (err as NodeJS.ErrnoException).code;
  process.stderr.write(`mock: cannot listen on ${host}:${port} (${code ?? (err as Error).message}); choose another port with MOCK_PORT\n`);
  process.exit(1);
}
process.stdout.write(
  `Mock Ticket Service at ${mock.url} (${ttlS} s tokens)\n` +
    `  client id:     ${DEMO_CLIENT.id}\n` +
    `  client secret: ${DEMO_CLIENT.secret}\n\n` +
    `Point a proxy at it, from this repository:\n\n` +
    `  export BASE_URL=${mock.url} CLIENT_ID=${DEMO_CLIENT.id} CLIENT_SECRET=${DEMO_CLIENT.secret}\n` +
    `  node dist/main.js check      # one token fetch\n` +
    `  node dist/main.js            # the proxy on 127.0.0.1:8180, admin on 8181\n\n` +
    `Ctrl-C stops it.\n`,
);
const stop = (): void => void mock.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
