import { createServer } from 'node:net';
import { systemClock } from '../../core/clock.js';
import type { Config } from '../../config/config.js';
import type { LoadedRoute } from '../../config/load.js';
import { ConfigError } from '../../core/errors.js';
import { createLogger, type Log } from '../../core/log.js';
import { dispatchersFromSettings, outboundDispatcher } from '../../net/dispatchers.js';
import type { TlsFiles } from '../../net/tls-files.js';
import type { StoreSettings } from '../../store/index.js';
import { configuredCredential, type Credential } from '../../token/client-auth/index.js';
import { describeFetchFailure } from '../../token/diagnose.js';
import { tokenEndpointFromConfig, unlistedSettings, type TokenEndpoint } from '../../token/discovery/index.js';
import { credentialIdentity } from '../../token/credential-identity.js';
import { tokenFetcher, type FetchToken } from '../../token/fetch-token.js';
import type { DpopClient } from '../../token/dpop/index.js';
import { readContainerMemory } from '../../overload/memory-limit.js';
import { SHED_ABOVE } from '../../overload/overload-guard.js';
import { checkCollector, type TracingSettings } from '../../telemetry/tracing/index.js';
import { checkTokenStore } from '../check-store.js';
import { listenCode, listenProblemMeaning, listenProblems } from '../listeners/port-probe.js';
import { dpopClient } from '../routes.js';
import { listenOnSocket, SocketInUseError } from '../listeners/unix-socket.js';
import type { ROUTE_CHECKS } from '../settings-checks.js';

/**
 * The `check` command: for each route (docs/routes.md), what its credential is (never the secret,
 * key or assertion), then one token fetch, its lifetime and granted scope printed (never the
 * token); routes with the same credential share one fetch. With DPoP, the key's RFC 7638
 * thumbprint and whether the token came back DPoP- or Bearer-typed. With `ISSUER_URL`, first the
 * token endpoint its metadata names, and a warning for the method or proof algorithm the metadata
 * does not list. With routes listed, each of a route's lines begins with its name, and a last line
 * per route ends with its result. Then whether the listeners could be opened now, the proxy's on
 * its port or its socket (`LISTEN_SOCKET`, made there and removed again: {@link trySocket}): a
 * port or socket in use is a warning only, since a running proxy holds its own; any other failure
 * is the start's. With a shared token store, whether it can be used and what it holds for each
 * credential (`check-store.ts`). Resolves with the exit status: 0 when every credential's token
 * was obtained; 1 when a metadata read or a fetch failed (with `DPOP=required`, a Bearer answer
 * too), a listener cannot be opened, a configured store cannot be used, or the memory limit is one
 * the idle proxy is already over the shedding line of ({@link memoryLimitProblem}); 2 for a
 * configuration the start refuses, or, without routes, when no credential is configured. With
 * tracing on, where spans go and whether the collector takes an empty export: a warning when it
 * does not, which leaves the status as it is (telemetry/tracing/collector-check.ts).
 */
export async function check(
  config: Config,
  startup: {
    tls: TlsFiles;
    store?: StoreSettings | undefined;
    tracing?: TracingSettings | undefined;
    routes: readonly LoadedRoute<typeof ROUTE_CHECKS>[];
  },
): Promise<number> {
  const log = createLogger('silent');
  const socket = await trySocket(config, log);
  if (socket.refused !== undefined) {
    // As the start says it (main.ts): the same error, the same words, the same status.
    process.stderr.write(`ticket-auth-proxy: ${socket.refused}\n`);
    return 2;
  }
  const { routes } = startup;
  // Without routes in the file, the top-level settings are the one route, said as ever.
  const listed = !(routes.length === 1 && routes[0]!.config === config);
  if (!listed && configuredCredential(config, { clock: systemClock, log, startup: routes[0]!.checked.token }).credential === undefined) {
    process.stderr.write('ticket-auth-proxy: check needs CLIENT_ID and CLIENT_SECRET_FILE (or CLIENT_SECRET)\n');
    return 2;
  }
  const listeners = listenerReport(config, socket, routes, log);
  const results: string[] = [];
  const fetched = new Map<string, { route: string; ok: boolean }>();
  const dpopClients = new Map<string, DpopClient>();
  let ok = true;
  for (const route of routes) {
    const say = listed ? prefixed(route.name) : plain;
    const result = await checkRoute(route, { say, log, dpopClients, fetched, store: startup.store });
    ok &&= result.ok;
    if (listed) results.push(`${route.name}: ${result.line}\n`);
  }
  const listenersOpen = (await listeners)();
  process.stdout.write(results.join(''));
  if (startup.tracing !== undefined) {
    // The collector is the whole proxy's, reached as the start reaches it (the top-level TLS files, the egress proxy).
    const outbound = outboundDispatcher(config, startup.tls.material);
    const collector = await checkCollector(startup.tracing, outbound);
    await outbound.destroy();
    process.stdout.write(collector.stdout);
    process.stderr.write(collector.stderr);
  }
  const shedsAll = memoryLimitProblem(config.memoryLimitMb);
  if (shedsAll !== undefined) process.stderr.write(`ticket-auth-proxy: ${shedsAll}\n`);
  return ok && listenersOpen && shedsAll === undefined ? 0 : 1;
}

/** Where a route's lines go: stdout and stderr, each line as it is, or begun with the route's name. */
interface Say {
  out(line: string): void;
  err(line: string): void;
}

const plain: Say = {
  out: (line) => void process.stdout.write(`${line}\n`),
  err: (line) => void process.stderr.write(`ticket-auth-proxy: ${line}\n`),
};

function prefixed(name: string): Say {
  return {
    out: (line) => void process.stdout.write(`${name}: ${line}\n`),
    err: (line) => void process.stderr.write(`ticket-auth-proxy: ${name}: ${line}\n`),
  };
}

/** What one route's check is made with: where it says things, and what earlier routes found. */
interface RouteCheck {
  readonly say: Say;
  readonly log: Log;
  /** One DPoP client per key, as the routes share them at start. */
  readonly dpopClients: Map<string, DpopClient>;
  /** The credentials fetched for so far, by what makes them the same: each fetched once. */
  readonly fetched: Map<string, { route: string; ok: boolean }>;
  readonly store: StoreSettings | undefined;
}

/** One route's credential checked: its fetch (or an earlier route's, for the same credential), and its store. */
async function checkRoute(route: LoadedRoute<typeof ROUTE_CHECKS>, c: RouteCheck): Promise<{ ok: boolean; line: string }> {
  const { config, checked } = route;
  const { say, log } = c;
  const auth = configuredCredential(config, { clock: systemClock, log, startup: checked.token });
  const credential = auth.credential;
  if (credential === undefined) return { ok: true, line: 'pass-through credentials only: no token to fetch' };
  const dpop = dpopClient(checked.dpop, { clock: systemClock, log }, c.dpopClients);
  // The same credential as the start tells it: one fetch for all the routes that hold it.
  const same = credentialIdentity(config, auth, checked.tls.material.cert, dpop);
  const earlier = c.fetched.get(same);
  if (earlier !== undefined) {
    return { ok: earlier.ok, line: `the same credential as "${earlier.route}": ${earlier.ok ? 'ok' : 'failed'}` };
  }
  const dispatchers = dispatchersFromSettings(config, checked.tls.material);
  for (const line of auth.describe(Date.now())) say.out(line);
  if (dpop !== undefined) {
    const key = dpop.prover.key();
    say.out(`DPoP: ${dpop.mode}, proofs signed ${key.alg}, key thumbprint (RFC 7638) ${key.thumbprint}`);
  }
  const dpopAlg = (): string | undefined => dpop?.prover.key().alg;
  const endpoint = tokenEndpointFromConfig(config, { dispatcher: dispatchers.token, clock: systemClock, log, dpopAlg });
  const clientAuth = auth.clientAuth;
  const fetchToken = tokenFetcher({ settings: config, endpoint, dispatcher: dispatchers.token, now: Date.now, clientAuth, dpop });
  const fetched = await fetchOnce({ config, endpoint, fetchToken, credential, dpop, say });
  await dispatchers.close();
  const storeUsable =
    c.store === undefined ||
    (await checkTokenStore(config, c.store, { credential: auth, clientId: credential.clientId, tls: checked.tls.material, dpop, log }));
  const ok = fetched.ok && storeUsable;
  c.fetched.set(same, { route: route.name, ok });
  return { ok, line: ok ? 'ok' : `failed: ${fetched.reason ?? 'the token store cannot be used'}` };
}

const MB = 1024 * 1024;

/**
 * Whether the memory limit (`MEMORY_LIMIT_MB`, else the container's) is one the idle proxy is
 * already over 90 % of: the start takes it (a cgroup may be set that way) and then sheds every
 * new request with `503 overloaded` while `/readyz` stays 200. The idle figure is this process's
 * resident memory once its token fetch is done: the same code loaded, as the started proxy holds it.
 */
function memoryLimitProblem(memoryLimitMb: number | undefined): string | undefined {
  if (memoryLimitMb === 0) return undefined;
  const limitBytes = memoryLimitMb === undefined ? readContainerMemory().limitBytes : memoryLimitMb * MB;
  if (limitBytes === undefined) return undefined;
  const idleBytes = process.memoryUsage.rss();
  if (idleBytes <= SHED_ABOVE * limitBytes) return undefined;
  const limit =
    memoryLimitMb === undefined ? `the container's memory limit (${Math.round(limitBytes / MB)} MB)` : `MEMORY_LIMIT_MB=${memoryLimitMb}`;
  return (
    `${limit} is below what the idle proxy holds, about ${Math.ceil(idleBytes / MB)} MB ` +
    `(this check, which loads the same code, holds that now): above ${SHED_ABOVE * 100} % of the limit every new request is ` +
    'answered 503 overloaded while /readyz stays 200; ' +
    `raise it (the chart gives 192 MB; docs/performance.md), or set MEMORY_LIMIT_MB=0 to turn shedding off`
  );
}

/** What one fetch of `check`'s is made with, and where it says what it found. */
interface OneFetch {
  readonly config: Config;
  readonly endpoint: TokenEndpoint;
  readonly fetchToken: FetchToken;
  readonly credential: Credential;
  readonly dpop: DpopClient | undefined;
  readonly say: Say;
}

/**
 * The issuer's token endpoint when there is one, then one token fetch, its lifetime and type
 * printed; `ok` when a token was obtained, else the reason.
 */
async function fetchOnce(f: OneFetch): Promise<{ ok: boolean; reason?: string }> {
  const { config, endpoint, fetchToken, credential, dpop, say } = f;
  const started = Date.now();
  try {
    if (endpoint.issuer !== undefined) {
      await endpoint.resolve();
      const metadata = endpoint.metadata!;
      say.out(`token endpoint: ${metadata.tokenEndpoint} (from ${metadata.documentUrl})`);
      for (const warning of unlistedSettings(metadata, config, dpop?.prover.key().alg)) say.err(`warning: ${warning}`);
    }
    const grant = await fetchToken(credential);
    const lifetimeS = Math.round(grant.lifetimeMs / 1000);
    say.out(
      `ok: token obtained from ${endpoint.url} in ${Date.now() - started} ms; ` +
        `lifetime ${lifetimeS} s (expires ${new Date(started + grant.lifetimeMs).toISOString()})`,
    );
    if (grant.scope !== undefined) say.out(scopeLine(grant.scope, config.tokenScope));
    if (dpop !== undefined) {
      say.out(
        grant.tokenType === 'DPoP'
          ? `token type: DPoP (bound to the key ${grant.dpopKey!.thumbprint})`
          : 'token type: Bearer (the identity provider did not bind the token to the key; DPOP=on uses it as Bearer)',
      );
    }
    return { ok: true };
  } catch (err) {
    const failure = describeFetchFailure(err, endpoint);
    say.err(`check failed: ${failure.outcome}: ${failure.text}`);
    return { ok: false, reason: `${failure.outcome}: ${failure.text}` };
  }
}

/** The scope the token endpoint granted (RFC 6749 §5.1), and what of `TOKEN_SCOPE` it left out (RFC 6749 §3.3 allows that). */
function scopeLine(granted: string, asked: string | undefined): string {
  const grantedTokens = new Set(granted.split(' '));
  const missing = asked === undefined ? [] : asked.split(/\s+/).filter((s) => s !== '' && !grantedTokens.has(s));
  const more = missing.length === 0 ? '' : `; TOKEN_SCOPE also asked for ${missing.join(' ')}, not granted`;
  return `scope granted: ${granted}${more}`;
}

/**
 * Whether the proxy and admin listeners could be opened now (the proxy listener on LISTEN_SOCKET
 * as {@link trySocket} found it), said once the fetch's lines are out: one line when all can; for
 * each that cannot, the start's refusal (the same words), a warning only when the port or socket
 * is in use (a running proxy holds its own), else a failure, since the start would fail on it too.
 * Resolves with how to say so, which returns false when the start would fail.
 */
async function listenerReport(
  config: Config,
  socket: SocketTrial,
  routes: readonly LoadedRoute<typeof ROUTE_CHECKS>[],
  log: Log,
): Promise<() => boolean> {
  const proxy = { what: 'the proxy listener (LISTEN_HOST, LISTEN_PORT)', host: config.listenHost, port: config.listenPort };
  const admin = { what: 'the admin listener (ADMIN_HOST, ADMIN_PORT)', host: config.adminHost, port: config.adminPort };
  // Each route's own port, as the start opens it (docs/routes.md).
  const own = routes.flatMap(({ name, way }) =>
    way.kind === 'port' ? [{ what: `route "${name}"'s listener (its listenHost, listenPort)`, host: way.host, port: way.port }] : [],
  );
  const listeners = [...(config.listenSocket === undefined ? [proxy, admin] : [admin]), ...own];
  const problems = await listenProblems(listeners, log);
  const at = (l: { host: string; port: number }): string => (l.host.includes(':') ? `[${l.host}]:${l.port}` : `${l.host}:${l.port}`);
  const socketLines = socket.inUse === undefined ? [] : [`ticket-auth-proxy: warning: ${socket.inUse}\n`];
  if (socket.inUse === undefined && problems.every((p) => p === undefined)) {
    const opened = socket.opened === undefined ? [] : [`socket ${socket.opened.path}${socket.opened.replacesStale ? STALE : ''}`];
    return () => {
      process.stdout.write(`listeners: ${[...opened, ...listeners.map(at)].join(' and ')} can be opened\n`);
      return true;
    };
  }
  // Both on one port: the admin listener finds it held by the proxy listener, as at start.
  const ownClash = config.listenSocket === undefined && problems[0] === undefined && proxy.port !== 0 && proxy.port === admin.port;
  let opens = true;
  const lines = problems.flatMap((problem, i) => {
    if (problem === undefined) return [];
    const code = listenCode(problem);
    const meaning = listenProblemMeaning(code);
    if (code === 'EADDRINUSE' && ownClash && listeners[i] === admin) {
      opens = false;
      return [`ticket-auth-proxy: ${problem.message}: the proxy listener takes this port itself; give ADMIN_PORT another\n`];
    }
    if (code === 'EADDRINUSE') {
      return [
        `ticket-auth-proxy: warning: ${problem.message} now: ${meaning!}; a proxy running with these settings holds it, as it should\n`,
      ];
    }
    opens = false;
    return [`ticket-auth-proxy: ${problem.message}${meaning === undefined ? '' : `: ${meaning}`}\n`];
  });
  return () => {
    process.stderr.write([...socketLines, ...lines].join(''));
    return opens;
  };
}

/** How the listener line says a socket no process answers on is at the path. */
const STALE = " (a socket no process answers on is there, a stopped proxy's: the start replaces it)";

/** What {@link trySocket} found at `LISTEN_SOCKET`'s path. */
interface SocketTrial {
  /** The start's refusal, in its words. */
  refused?: string;
  /** A process answers on the socket: a warning, as for a port in use. */
  inUse?: string;
  /** The socket could be made there (and was removed again). */
  opened?: { path: string; replacesStale: boolean };
}

/**
 * Whether the proxy listener's socket can be made at `LISTEN_SOCKET`'s path, found the way the
 * start finds it: the socket is made there as the proxy makes it (unix-socket.ts; a socket no
 * process answers on is replaced, as at start), then closed and removed. What the start refuses
 * there (a directory that does not exist or cannot be written, a link, a file, a directory) was
 * refused with the settings already (read-config.ts); what is left is a failure to bind, and a
 * socket a process answers on, a warning only, as a port in use is: a running proxy holds its own.
 */
async function trySocket(config: Config, log: Log): Promise<SocketTrial> {
  const path = config.listenSocket;
  if (path === undefined) return {};
  const server = createServer();
  try {
    const made = await listenOnSocket(server, { path, mode: config.listenSocketMode }, log);
    await new Promise((resolve) => server.close(resolve));
    await made.remove();
    return { opened: { path, replacesStale: made.replacedStale } };
  } catch (err) {
    if (err instanceof SocketInUseError) {
      return { inUse: `${err.problems.join('; ')}; a proxy running with these settings holds it, as it should` };
    }
    if (!(err instanceof ConfigError)) throw err;
    return { refused: err.message };
  }
}
