import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { BadRequestError, MethodNotAllowedError, UpgradeNotSupportedError } from '../errors.js';
import type { Log } from '../log.js';
import type { Metrics } from '../metrics.js';
import { rawProblemResponse } from '../problem.js';

export interface ProxyServerOptions {
  forward: (req: IncomingMessage, res: ServerResponse, expectContinue?: boolean) => void;
  metrics: Metrics;
  log: Log;
}

/**
 * The proxy listener: plain HTTP/1.1 on loopback by default. Requests go to the forwarder; the
 * shapes Node hands elsewhere get their problem answer here: `CONNECT` (405), protocol upgrades
 * (501, PRODUCT §4.4) and requests the HTTP parser refuses (400).
 */
export function createProxyServer(options: ProxyServerOptions): Server {
  const { forward, metrics, log } = options;
  const server = createServer(
    {
      // No header parsing surprises: reject obsolete line folding and similar shapes (smuggling).
      insecureHTTPParser: false,
      requireHostHeader: false,
      keepAliveTimeout: 65_000,
      // A caller gets 10 s for a request head (slowloris), checked every second; the body may
      // stream for as long as it takes (requestTimeout 0: large uploads). README "Limits".
      headersTimeout: 10_000,
      connectionsCheckingInterval: 1_000,
      requestTimeout: 0,
    },
    (req, res) => forward(req, res),
  );
  server.on('checkContinue', (req, res) => forward(req, res, true));
  const refuse = (req: IncomingMessage, socket: Duplex, err: Error): void => {
    metrics.observeRequest(req.method ?? 'other', err instanceof MethodNotAllowedError ? 405 : 501, 0);
    socket.on('error', () => {});
    socket.end(rawProblemResponse(err));
  };
  server.on('connect', (req: IncomingMessage, socket: Duplex) =>
    refuse(req, socket, new MethodNotAllowedError('CONNECT is not forwarded')),
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) =>
    refuse(req, socket, new UpgradeNotSupportedError('protocol upgrades (WebSocket) are not forwarded')),
  );
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    log.debug({ code: err.code }, 'malformed request refused');
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    metrics.observeRequest('other', 400, 0);
    socket.on('error', () => {});
    socket.end(rawProblemResponse(new BadRequestError(`the request could not be parsed (${err.code ?? 'bad request'})`)));
  });
  return server;
}
