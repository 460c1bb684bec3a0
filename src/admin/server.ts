import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from '../core/node-http.js';
import type { Registry } from 'prom-client';
import { NotProxiedError, MethodNotAllowedError } from '../core/errors.js';
import type { Log } from '../core/log.js';
import { sendProblem } from '../core/problem.js';

/** Whether one route is ready, and why not, or why it is ready all the same (`READINESS=started` without a token). */
export interface RouteReadiness {
  readonly ready: boolean;
  readonly reason?: string;
}

/** Whether the proxy is ready (every route is), and why not, with each route's own answer. */
export interface ReadinessState extends RouteReadiness {
  readonly routes?: Readonly<Record<string, RouteReadiness>>;
}

/** The readiness now, as `/readyz` answers it. */
export type ReadinessCheck = () => ReadinessState;

export interface AdminOptions {
  registry: Registry;
  readiness: ReadinessCheck;
  log: Log;
}

function json(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The admin listener: `/livez`, `/readyz`, `/metrics`. Admin requests are not counted in the metrics. */
export function createAdminServer(options: AdminOptions): Server {
  const { registry, readiness, log } = options;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendProblem(res, new MethodNotAllowedError('the admin listener answers GET and HEAD only'));
      return;
    }
    switch (path) {
      case '/livez':
        json(res, 200, { status: 'ok' });
        return;
      case '/readyz': {
        const { ready, reason, routes } = readiness();
        json(res, ready ? 200 : 503, {
          status: ready ? 'ready' : 'not_ready',
          ...(reason === undefined ? {} : { reason }),
          ...(routes === undefined ? {} : { routes }),
        });
        return;
      }
      case '/metrics':
        registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
            res.end(text);
          },
          (err: unknown) => {
            log.error({ err }, 'metrics collection failed');
            json(res, 500, { status: 'error' });
          },
        );
        return;
      default:
        sendProblem(res, new NotProxiedError('the admin listener serves /livez, /readyz and /metrics'));
    }
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  return server;
}
