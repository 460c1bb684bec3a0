import { connect, createServer } from 'node:net';
import { systemClock } from '../../core/clock.js';
import type { Config } from '../../config/config.js';
import { ConfigError } from '../../core/errors.js';
import { createLogger, type Log } from '../../core/log.js';
import { dispatchersFromSettings } from '../../net/dispatchers.js';
import type { TlsFiles } from '../../net/tls-files.js';
import type { StoreSettings } from '../../store/index.js';
import { configuredCredential, type Credential, type TokenStartup } from '../../token/client-auth/index.js';
import { describeFetchFailure } from '../../token/diagnose.js';
import { tokenEndpointFromConfig, unlistedSettings, type TokenEndpoint } from '../../token/discovery/index.js';
import { tokenFetcher, type FetchToken } from '../../token/fetch-token.js';
import type { DpopClient, DpopStartup } from '../../token/dpop/index.js';
import { readContainerMemory } from '../../overload/memory-limit.js';
import { SHED_ABOVE } from '../../overload/overload-guard.js';
import { checkCollector, type TracingSettings } from '../../telemetry/tracing/index.js';
import { checkTokenStore } from '../check-store.js';
import { listenCode, listenProblemMeaning, listenProblems } from '../listeners/port-probe.js';
import { dpopClient } from '../routes.js';
import { listenOnSocket } from '../listeners/unix-socket.js';

/**
 * The `check` command: what the credential is (never the secret, key or assertion), then one
 * token fetch, its lifetime and granted scope printed (never the token). With DPoP, the key's RFC
 * 7638 thumbprint and whether the token came back DPoP- or Bearer-typed. With `ISSUER_URL`, first
 * the token endpoint its metadata names, and a warning for the method or proof algorithm the
 * metadata does not list. Then whether the two listeners could be opened now: a port in use is a
 * warning only, since a running proxy holds its own ports; any other failure is the start's. With
 * a shared token store, whether it can be used and what it holds for the credential
 * (`check-store.ts`). Before all that, what the start refuses once the settings are read: the
 * place of `LISTEN_SOCKET` ({@link socketRefusal}). Resolves with the exit status: 0 when a token
 * was obtained; 1 when the metadata or the fetch failed (with `DPOP=required`, a Bearer answer
 * too), a listener cannot be opened, a configured store cannot be used, or the memory limit is one
 * the idle proxy is already over the shedding line of ({@link memoryLimitProblem}); 2 for a
 * configuration the start refuses, or when no credential is configured. With tracing on, where
 * spans go and whether the collector takes an empty export: a warning when it does not, which
 * leaves the status as it is (telemetry/tracing/collector-check.ts).
 */
export async function check(
  config: Config,
  startup: {
    tls: TlsFiles;
    token: TokenStartup;
    dpop?: DpopStartup;
    store?: StoreSettings | undefined;
    tracing?: TracingSettings | undefined;
  },
): Promise<number> {
  const log = createLogger('silent');
  const socket = await socketRefusal(config, log);
  if (socket.refused !== undefined) {
    // As the start says it (main.ts): the same error, the same words, the same status.
    process.stderr.write(`ticket-auth-proxy: ${socket.refused}\n`);
    return 2;
  }
  const auth = configuredCredential(config, { clock: systemClock, log, startup: startup.token });
  const credential = auth.credential;
  if (credential === undefined) {
    process.stderr.write('ticket-auth-proxy: check needs CLIENT_ID and CLIENT_SECRET_FILE (or CLIENT_SECRET)\n');
    return 2;
  }
  const dispatchers = dispatchersFromSettings(config, startup.tls.material);
  for (const line of auth.describe(Date.now())) process.stdout.write(`${line}\n`);
  const dpop = startup.dpop === undefined ? undefined : dpopClient(startup.dpop, { clock: systemClock, log });
  if (dpop !== undefined) {
    const key = dpop.prover.key();
    process.stdout.write(`DPoP: ${dpop.mode}, proofs signed ${key.alg}, key thumbprint (RFC 7638) ${key.thumbprint}\n`);
  }
  const dpopAlg = (): string | undefined => dpop?.prover.key().alg;
  const endpoint = tokenEndpointFromConfig(config, { dispatcher: dispatchers.token, clock: systemClock, log, dpopAlg });
  const fetchToken = tokenFetcher({
    settings: config,
    endpoint,
    dispatcher: dispatchers.token,
    now: Date.now,
    clientAuth: auth.clientAuth,
    dpop,
  });
  const listeners = listenerReport(config, log);
  const fetched = await fetchOnce(config, endpoint, fetchToken, credential, dpop);
  const listenersOpen = (await listeners)();
  if (socket.inUse !== undefined) process.stderr.write(`ticket-auth-proxy: warning: ${socket.inUse}\n`);
  if (startup.tracing !== undefined) {
    const collector = await checkCollector(startup.tracing, dispatchers.token);
    process.stdout.write(collector.stdout);
    process.stderr.write(collector.stderr);
  }
  await dispatchers.close();
  const shedsAll = memoryLimitProblem(config.memoryLimitMb);
  if (shedsAll !== undefined) process.stderr.write(`ticket-auth-proxy: ${shedsAll}\n`);
  const storeUsable =
    startup.store === undefined ||
    (await checkTokenStore(config, startup.store, {
      credential: auth,
      clientId: credential.clientId,
      tls: startup.tls.material,
      dpop,
      log,
    }));
  return fetched && storeUsable && listenersOpen && shedsAll === undefined ? 0 : 1;
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

/** The issuer's token endpoint when there is one, then one token fetch, its lifetime and type printed; true when a token was obtained. */
async function fetchOnce(
  config: Config,
  endpoint: TokenEndpoint,
  fetchToken: FetchToken,
  credential: Credential,
  dpop: DpopClient | undefined,
): Promise<boolean> {
  const started = Date.now();
  try {
    if (endpoint.issuer !== undefined) {
      await endpoint.resolve();
      const metadata = endpoint.metadata!;
      process.stdout.write(`token endpoint: ${metadata.tokenEndpoint} (from ${metadata.documentUrl})\n`);
      for (const warning of unlistedSettings(metadata, config, dpop?.prover.key().alg))
        process.stderr.write(`ticket-auth-proxy: warning: ${warning}\n`);
    }
    const grant = await fetchToken(credential);
    const lifetimeS = Math.round(grant.lifetimeMs / 1000);
    process.stdout.write(
      `ok: token obtained from ${endpoint.url} in ${Date.now() - started} ms; ` +
        `lifetime ${lifetimeS} s (expires ${new Date(started + grant.lifetimeMs).toISOString()})\n`,
    );
    if (grant.scope !== undefined) process.stdout.write(`${scopeLine(grant.scope, config.tokenScope)}\n`);
    if (dpop !== undefined) {
      process.stdout.write(
        grant.tokenType === 'DPoP'
          ? `token type: DPoP (bound to the key ${grant.dpopKey!.thumbprint})\n`
          : 'token type: Bearer (the identity provider did not bind the token to the key; DPOP=on uses it as Bearer)\n',
      );
    }
    return true;
  } catch (err) {
    const failure = describeFetchFailure(err, endpoint);
    process.stderr.write(`ticket-auth-proxy: check failed: ${failure.outcome}: ${failure.text}\n`);
    return false;
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
 * Whether the proxy and admin listeners could be opened now (the admin listener alone beside
 * LISTEN_SOCKET), said once the fetch's lines are out: one line when all can; for each that cannot,
 * the start's refusal (the same words), a warning only when the port is in use (a running proxy
 * holds its own), else a failure, since the start would fail on it too. Resolves with how to say
 * so, which returns false when the start would fail.
 */
async function listenerReport(config: Config, log: Log): Promise<() => boolean> {
  // A socket was tried before the fetch (socketRefusal).
  const proxy = { what: 'the proxy listener (LISTEN_HOST, LISTEN_PORT)', host: config.listenHost, port: config.listenPort };
  const admin = { what: 'the admin listener (ADMIN_HOST, ADMIN_PORT)', host: config.adminHost, port: config.adminPort };
  const listeners = config.listenSocket === undefined ? [proxy, admin] : [admin];
  const problems = await listenProblems(listeners, log);
  const at = (l: { host: string; port: number }): string => (l.host.includes(':') ? `[${l.host}]:${l.port}` : `${l.host}:${l.port}`);
  if (problems.every((p) => p === undefined)) {
    return () => {
      process.stdout.write(`listeners: ${listeners.map(at).join(' and ')} can be opened\n`);
      return true;
    };
  }
  // Both on one port: the admin listener finds it held by the proxy listener, as at start.
  const ownClash = listeners.length === 2 && problems[0] === undefined && proxy.port !== 0 && proxy.port === admin.port;
  let opens = true;
  const lines = problems.flatMap((problem) => {
    if (problem === undefined) return [];
    const code = listenCode(problem);
    const meaning = listenProblemMeaning(code);
    if (code === 'EADDRINUSE' && ownClash) {
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
    process.stderr.write(lines.join(''));
    return opens;
  };
}

/**
 * What the start would refuse at `LISTEN_SOCKET`'s path (a directory that does not exist or cannot
 * be written, a link, a file, a directory), found the way the start finds it: the socket is made
 * there as the proxy makes it (unix-socket.ts; a socket no process answers on is replaced, as at
 * start), then closed and removed. A socket a process answers on is a warning only, as a port in
 * use is: a running proxy holds its own socket.
 */
async function socketRefusal(config: Config, log: Log): Promise<{ refused?: string; inUse?: string }> {
  const path = config.listenSocket;
  if (path === undefined) return {};
  const server = createServer();
  try {
    const made = await listenOnSocket(server, { path, mode: config.listenSocketMode }, log);
    await new Promise((resolve) => server.close(resolve));
    await made.remove();
    return {};
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    if (await answers(path)) return { inUse: `${err.problems.join('; ')}; a proxy running with these settings holds it, as it should` };
    return { refused: err.message };
  }
}

/** Whether a process answers on the socket at `path` (a full queue counts: it is in use). */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    const done = (answered: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answered);
    };
    const timer = setTimeout(() => done(true), 1000);
    socket.once('connect', () => done(true));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'EAGAIN'));
  });
}
