import type { Server } from 'node:http';
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';

/** How one part is stopped: its timers cleared, its watchers closed, its connections released. */
export type Stop = () => void | Promise<void>;

/**
 * The one list of things to stop, filled as the parts are built and run both when start-up fails
 * and at shutdown. Parts stop in the reverse order of their registration, so that nothing is
 * stopped before the parts that use it (the connections last).
 */
export class StopList {
  private readonly stops: Stop[] = [];

  /** Registers a part's stop; `undefined` (a part with nothing to stop) is ignored. */
  add(stop: Stop | undefined): void {
    if (stop !== undefined) this.stops.push(stop);
  }

  /** Stops every part registered, once, the last registered first. */
  async stopAll(): Promise<void> {
    for (let stop = this.stops.pop(); stop !== undefined; stop = this.stops.pop()) await stop();
  }
}

export interface ShutdownOptions {
  /** Listeners to close, the proxy's first. */
  servers: readonly Server[];
  delayS: number;
  timeoutS: number;
  clock: Clock;
  log: Log;
  /** Marks the process not ready (`/readyz` 503) at once. */
  onBegin: () => void;
  /** Once no listener accepts: removes what served only new connections (the socket file of `LISTEN_SOCKET`). */
  onListenersClosed?: () => Promise<void>;
  /** Releases everything else (timers, pools) once the listeners are closed. */
  onClosed: () => Promise<void>;
}

/**
 * Graceful shutdown (docs/operations.md, "Shutdown"): not ready at once, keep serving for `delayS`, then stop
 * accepting, let in-flight requests finish for at most `timeoutS`, close idle keep-alive sockets.
 * Resolves with the exit status: 0 after a full drain, 1 when the drain timed out.
 */
export async function shutdown(options: ShutdownOptions): Promise<number> {
  const { servers, delayS, timeoutS, clock, log } = options;
  options.onBegin();
  log.info({ delayS, timeoutS }, 'shutdown started: not ready; still serving');
  if (delayS > 0) await new Promise<void>((resolve) => clock.setTimeout(resolve, delayS * 1000));

  const closed = Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        }),
    ),
  );
  await options.onListenersClosed?.();
  // Logged once no new connection can be accepted.
  log.info({}, 'listeners closed; draining in-flight requests');
  // A kept-alive connection that finishes its request while draining goes idle: close it then.
  const sweep = (): void => {
    for (const server of servers) server.closeIdleConnections();
    sweepTimer = clock.setTimeout(sweep, 100);
  };
  let sweepTimer = clock.setTimeout(sweep, 100);
  let timer: unknown;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = clock.setTimeout(() => resolve(true), timeoutS * 1000);
  });
  const drainedInTime = !(await Promise.race([closed.then(() => false), timedOut]));
  clock.clearTimeout(timer);
  clock.clearTimeout(sweepTimer);
  if (!drainedInTime) {
    log.warn({ timeoutS }, 'drain timed out; closing the remaining connections');
    for (const server of servers) server.closeAllConnections();
  }
  await options.onClosed();
  log.info({ drained: drainedInTime }, 'shutdown complete');
  return drainedInTime ? 0 : 1;
}
