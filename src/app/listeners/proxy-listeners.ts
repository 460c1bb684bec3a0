import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../../config/config.js';
import type { RouteWay } from '../../config/routes.js';
import type { Log } from '../../core/log.js';
import type { ListenerRoutes } from '../../proxy/forward.js';
import type { Route } from '../../proxy/route.js';
import { listen } from './listen.js';
import { listenOnSocket, type SocketFile } from './unix-socket.js';

/** Where a proxy listener opens: a TCP address, or a Unix-domain socket. */
export type ListenerPlace =
  | { readonly kind: 'port'; readonly host: string; readonly port: number }
  | { readonly kind: 'socket'; readonly path: string; readonly mode: string };

/** One proxy listener to open: where, the routes it serves, and how messages name it and its settings. */
export interface ListenerPlan {
  readonly place: ListenerPlace;
  readonly routes: ListenerRoutes;
  /** How messages name it: `the proxy listener (LISTEN_HOST, LISTEN_PORT)`, `route "eu"'s listener (its listenPort)`. */
  readonly what: string;
  /** The route every request on it goes to, when it is a route's own listener. */
  readonly route: string | undefined;
}

/** A proxy listener, open: its server, and its address or socket's path. */
export interface OpenListener {
  readonly plan: ListenerPlan;
  readonly server: Server;
  readonly address: AddressInfo | string;
  readonly socketFile: SocketFile | undefined;
}

/**
 * The proxy's listeners (docs/routes.md): the main one (`LISTEN_HOST`/`LISTEN_PORT`, or
 * `LISTEN_SOCKET`), serving the mounted routes and the route of the paths no mount takes; then a
 * listener of its own for each route that names one (`listenPort`, `listenSocket`).
 */
export function listenerPlans(config: Config, routes: readonly { route: Route; way: RouteWay }[]): ListenerPlan[] {
  const mounts = routes.flatMap(({ route, way }) => (way.kind === 'mount' ? [{ prefix: way.mount, route }] : []));
  const main = routes.find(({ way }) => way.kind === 'main')?.route;
  const plans: ListenerPlan[] = [
    {
      place:
        config.listenSocket === undefined
          ? { kind: 'port', host: config.listenHost, port: config.listenPort }
          : { kind: 'socket', path: config.listenSocket, mode: config.listenSocketMode },
      routes: { mounts, main },
      what: config.listenSocket === undefined ? 'the proxy listener (LISTEN_HOST, LISTEN_PORT)' : 'the proxy listener (LISTEN_SOCKET)',
      route: mounts.length === 0 ? main?.name : undefined,
    },
  ];
  for (const { route, way } of routes) {
    if (way.kind !== 'port' && way.kind !== 'socket') continue;
    plans.push({
      place: way,
      routes: { mounts: [], main: route },
      what: `route "${route.name}"'s listener (its ${way.kind === 'port' ? 'listenHost, listenPort' : 'listenSocket'})`,
      route: route.name,
    });
  }
  return plans;
}

/**
 * Opens each listener in turn, each server made by `serve`; should one fail, closes those already
 * open, removes their sockets, and rejects naming the listener and its settings.
 */
export async function openListeners(
  plans: readonly ListenerPlan[],
  serve: (plan: ListenerPlan) => Server,
  log: Log,
): Promise<OpenListener[]> {
  const open: OpenListener[] = [];
  try {
    for (const plan of plans) {
      const server = serve(plan);
      const { place } = plan;
      if (place.kind === 'port') {
        const address = await listen(server, { host: place.host, port: place.port, what: plan.what }, log).catch((err: unknown) => {
          server.close();
          throw err;
        });
        open.push({ plan, server, address, socketFile: undefined });
      } else {
        const socketFile = await listenOnSocket(server, { path: place.path, mode: place.mode }, log).catch((err: unknown) => {
          server.close();
          throw err;
        });
        open.push({ plan, server, address: socketFile.path, socketFile });
      }
    }
  } catch (err) {
    await closeListeners(open, log);
    throw err;
  }
  return open;
}

/** Closes listeners opened for a start that failed, and removes their sockets. */
async function closeListeners(open: readonly OpenListener[], log: Log): Promise<void> {
  for (const l of open) l.server.close();
  await removeSockets(open, log);
}

/** Removes the listeners' socket files, once no listener accepts. */
export async function removeSockets(open: readonly OpenListener[], log: Log): Promise<void> {
  for (const l of open) {
    await l.socketFile
      ?.remove()
      .catch((err: unknown) => log.warn({ err, socket: l.socketFile?.path }, 'a proxy socket could not be removed'));
  }
}

/**
 * The origin a rewritten `Location` names when the caller sent no `Host`: the listener's. A Unix
 * socket has none: the Location is then an absolute path, which a client resolves against the
 * URL it used, the one that leads back to the socket (docs/unix-socket.md, "What differs from TCP").
 */
export function listenOrigin(place: ListenerPlace): string | undefined {
  if (place.kind === 'socket') return undefined;
  return `http://${place.host.includes(':') ? `[${place.host}]` : place.host}:${place.port}`;
}
