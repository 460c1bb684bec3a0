import { isIPv4, isIPv6 } from 'node:net';
import type { SettingsCheckContext } from '../../config/load.js';
import { socketPathProblem } from './unix-socket.js';

/**
 * Checks the proxy listener's settings once parsed: a Unix socket (`LISTEN_SOCKET`) or a TCP
 * address (`LISTEN_HOST`, `LISTEN_PORT`), never both, and never the admin listener's port on an
 * address that overlaps its own; a socket path the kernel can bind; and a
 * `LISTEN_SOCKET_MODE` that lets someone connect, given only with a socket. What is at the path
 * is examined when the proxy starts (unix-socket.ts).
 */
export function checkListenerSettings(ctx: SettingsCheckContext): void {
  routeListeners(ctx);
  const { config } = ctx;
  if (!ctx.given('listenSocket')) {
    if (ctx.given('listenSocketMode')) {
      ctx.problem(
        `${ctx.name('listenSocketMode')} is set without LISTEN_SOCKET: the mode is the socket file's; set LISTEN_SOCKET or remove it`,
      );
    }
    const { listenHost, listenPort, adminHost, adminPort } = config;
    if (listenPort !== 0 && listenPort === adminPort && overlap(listenHost, adminHost)) {
      ctx.problem(
        `${ctx.name('listenPort')} and ${ctx.name('adminPort')} are both ${listenPort} on addresses that overlap (LISTEN_HOST ` +
          `${listenHost}, ADMIN_HOST ${adminHost}): the two listeners cannot share a port; give ADMIN_PORT another`,
      );
    }
    return;
  }
  for (const tcp of ['listenHost', 'listenPort'] as const) {
    if (ctx.given(tcp)) {
      ctx.problem(
        `${ctx.bothSet('listenSocket', tcp)}: the proxy listener is a Unix socket (LISTEN_SOCKET) or a TCP address ` +
          `(LISTEN_HOST, LISTEN_PORT), not both; remove ${ctx.name(tcp)}`,
      );
    }
  }
  if (config.listenSocket !== undefined) {
    const problem = socketPathProblem(config.listenSocket, ctx.name('listenSocket'));
    if (problem !== undefined) ctx.problem(problem);
  }
  // Connecting to a socket takes write permission on its file (unix(7)).
  if (ctx.given('listenSocketMode') && (Number.parseInt(config.listenSocketMode, 8) & 0o222) === 0) {
    ctx.problem(
      `${ctx.name('listenSocketMode')} ${config.listenSocketMode} lets no one connect: connecting to a socket takes write permission ` +
        'on its file; use 0660 (the proxy and its group) or 0600 (the proxy alone)',
    );
  }
}

/**
 * The routes' own listeners (docs/routes.md): no two on one port (on addresses that overlap) or
 * one socket, none on the main listener's port or socket or on the admin port, and each socket
 * path one the kernel can bind. Each problem names `routes` and the route.
 */
function routeListeners(ctx: SettingsCheckContext): void {
  const { config } = ctx;
  const taken: { who: string; host: string; port: number }[] = [
    { who: 'ADMIN_PORT (the admin listener)', host: config.adminHost, port: config.adminPort },
  ];
  if (config.listenSocket === undefined) {
    taken.push({ who: 'LISTEN_PORT (the main proxy listener)', host: config.listenHost, port: config.listenPort });
  }
  const sockets = new Map<string, string>();
  if (config.listenSocket !== undefined) sockets.set(config.listenSocket, 'LISTEN_SOCKET (the main proxy listener)');
  for (const { name, way } of ctx.routes) {
    if (way.kind === 'port') {
      const clash = way.port === 0 ? undefined : taken.find((t) => t.port === way.port && overlap(t.host, way.host));
      if (clash !== undefined) {
        ctx.problem(`routes: "${name}" listens on port ${way.port}, as ${clash.who} does: give each route a port of its own`);
      }
      taken.push({ who: `route "${name}"`, host: way.host, port: way.port });
    } else if (way.kind === 'socket') {
      const problem = socketPathProblem(way.path, `routes: "${name}"'s listenSocket`);
      if (problem !== undefined) ctx.problem(problem);
      const clash = sockets.get(way.path);
      if (clash !== undefined) {
        ctx.problem(`routes: "${name}" listens on the socket ${way.path}, as ${clash} does: give each route a socket of its own`);
      }
      sockets.set(way.path, `route "${name}"`);
    }
  }
}

/**
 * Whether two listeners' hosts take the same port: the same address; `::`, every address of both
 * families (Node listens dual-stack); or `0.0.0.0` beside an IPv4 address (an IPv6 one beside it
 * listens on its own). A host name may resolve to any address, so it is taken to overlap every
 * host: two listeners on one port are told apart by addresses alone.
 */
function overlap(a: string, b: string): boolean {
  const everyAddress = (host: string): boolean => isIPv6(host) && /^[0:]+$/.test(host);
  const everyIPv4 = (host: string, other: string): boolean => host === '0.0.0.0' && isIPv4(other);
  // A host name (localhost) may resolve to any address: it overlaps every other host.
  const name = (host: string): boolean => !isIPv4(host) && !isIPv6(host);
  return a === b || name(a) || name(b) || everyAddress(a) || everyAddress(b) || everyIPv4(a, b) || everyIPv4(b, a);
}
