import { createServer, type Server } from 'node:net';
import type { Log } from '../../core/log.js';
import { listen, type ListenTarget } from './listen.js';

/**
 * Why each listener could not be opened right now (the error `listen` gives, naming the listener,
 * its settings and the system's code), or undefined for one that could. Each is opened as the
 * proxy opens it (`::` falling back to `0.0.0.0` where the host has no IPv6), in order, and held
 * until the last is tried, as the proxy holds them (two on one port clash here too), then closed.
 * For `check` and `npm run demo`, which say so before the proxy would fail at start; the answer
 * holds for this moment only.
 */
export async function listenProblems(targets: readonly ListenTarget[], log: Log): Promise<(Error | undefined)[]> {
  const opened: Server[] = [];
  const problems: (Error | undefined)[] = [];
  for (const target of targets) {
    const server = createServer();
    try {
      await listen(server, target, log);
      opened.push(server);
      problems.push(undefined);
    } catch (err) {
      problems.push(err as Error);
    }
  }
  await Promise.all(opened.map((server) => new Promise((resolve) => server.close(resolve))));
  return problems;
}

/** The system's code of a listen failure (`EADDRINUSE`, ...), from the error `listen` gives. */
export function listenCode(err: Error): string | undefined {
  const code = (err.cause as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** What a listen error code means to an operator, in a few words, when it is a common one. */
export function listenProblemMeaning(code: string | undefined): string | undefined {
  switch (code) {
    case 'EADDRINUSE':
      return 'another process holds the port';
    case 'EACCES':
      return 'not allowed: a port below 1024 needs privileges';
    case 'EADDRNOTAVAIL':
      return 'this host has no such address';
    default:
      return undefined;
  }
}
