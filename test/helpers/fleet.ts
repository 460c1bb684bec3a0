/**
 * Fleets of real proxy processes sharing one mock Ticket Service and one real Redis (the token
 * store tests): the store's settings for a target, a fleet started together, traffic spread over
 * it, and the store read back raw by the administrator.
 */
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { tempDir } from './certs.js';
import type { RedisTarget } from './redis-harness.js';
import type { Stack, StartStack } from './stack.js';

export const STORE_USER = { name: 'ticket-proxy-fleet', password: 'fleet-store-password-7e2', prefix: 'tap-fleet:' };

let prefixes = 0;
/** A prefix under the user's, new for each call: tests on one server keep apart. */
export function freshPrefix(): string {
  return `${STORE_USER.prefix}${process.pid}-${++prefixes}:`;
}

/** A temporary folder for the password and TLS files, removed when the test file ends. */
const files = tempDir();
process.on('exit', () => files.remove());

/** Writes a file the proxies read (a password, a secret); returns its path. */
export function writeFile(name: string, text: string): string {
  return files.write(name, text);
}

/** The proxy's store settings for `target`: the password from a file, the TLS material from files. */
export function storeEnv(target: RedisTarget, prefix: string): Record<string, string> {
  const env: Record<string, string> = {
    TOKEN_STORE_URL: target.url,
    TOKEN_STORE_MODE: target.mode,
    TOKEN_STORE_PREFIX: prefix,
    // A loaded machine can be slow to answer (a store timeout makes a proxy fetch alone, which is
    // not what these tests count); the product's default is 250 ms.
    TOKEN_STORE_TIMEOUT_MS: '3000',
  };
  if (target.password !== undefined) env.TOKEN_STORE_PASSWORD_FILE = writeFile(`password-${prefix.replace(/\W/g, '_')}`, target.password);
  if (target.tls?.ca !== undefined && target.adminTls !== undefined) env.CA_FILE = writeFile('store-ca.pem', target.adminTls.ca);
  if (target.tls?.cert !== undefined && target.tls.key !== undefined) {
    env.TLS_CLIENT_CERT_FILE = writeFile('store-client.pem', target.tls.cert);
    env.TLS_CLIENT_KEY_FILE = writeFile('store-client.key', target.tls.key);
  }
  return env;
}

/**
 * Starts `n` proxies together against `gateway`, all with the same credential and `env`; each is
 * ready. Processes started together on a busy machine share its cores: each may take a minute,
 * a deadline that only stops a start that hangs.
 */
export function startFleet(
  stack: StartStack,
  gateway: MockTicketService,
  n: number,
  options: { clientId: string; secret: string; env: Record<string, string>; ready?: boolean },
): Promise<Stack[]> {
  return Promise.all(
    Array.from({ length: n }, () =>
      stack({
        gateway,
        clientId: options.clientId,
        secret: options.secret,
        env: options.env,
        ready: options.ready,
        readyTimeoutMs: 60_000,
      }),
    ),
  );
}

/**
 * How each proxy of `fleet` got its first token: `fetched` itself or `adopted` from the store
 * (its first log line saying so, waited for).
 */
export function firstTokens(fleet: Stack[]): Promise<('fetched' | 'adopted')[]> {
  return Promise.all(
    fleet.map(async (s) => {
      const line = await s.proxy.waitForLog((l) => l.msg === 'token fetched' || l.msg === 'token taken from the store', 60_000);
      return line.msg === 'token fetched' ? 'fetched' : 'adopted';
    }),
  );
}

/**
 * The most fetches a fleet sharing one credential through a store makes in `ms` of steady state
 * with the default refresh ratio: one and a half a token lifetime of `ttlS` (docs/token-store.md,
 * "What it saves", measures 1.43). Counted over the time that really passed, so a machine slow to
 * start or to serve is given the refreshes its longer run needs.
 */
export function sharedFetchBound(ms: number, ttlS: number): number {
  return Math.ceil((1.5 * ms) / (ttlS * 1000));
}

/** Milliseconds since `gateway` was first asked for a token (0 before). */
export function sinceFirstFetch(gateway: MockTicketService): number {
  const first = gateway.tokenRequests[0];
  return first === undefined ? 0 : Date.now() - first.at;
}

/**
 * Requests spread over the fleet, four at a time, for `ms`: the count of each status. Every
 * proxy is asked in turn, so each meets its own token's refresh moments.
 */
export async function traffic(fleet: Stack[], ms: number, headers: Record<string, string> = {}): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const until = Date.now() + ms;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < until) {
      const s = fleet[next++ % fleet.length]!;
      const res = await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`, { headers });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return statuses;
}

/** The statuses other than 200, as `{ status: count }` (empty when every request succeeded). */
export function failures(statuses: Map<number, number>): Record<number, number> {
  return Object.fromEntries([...statuses].filter(([status]) => status !== 200));
}
