/**
 * The mock's listener: HTTP, or HTTPS with a key and certificate (and, with `requestCert`, a
 * client certificate signed by `ca`), counting connections and handshakes, and able to go down
 * and come back on the same port.
 */
import { createServer, type RequestListener } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

/** The mock's TLS material (PEM). */
export interface MockTls {
  key: string;
  cert: string;
  ca?: string;
  requestCert?: boolean;
}

export interface Listener {
  readonly port: number;
  connections(): number;
  handshakes(): number;
  openConnections(): number;
  dropConnections(): void;
  setTls(tls: MockTls): void;
  setDown(down: boolean): Promise<void>;
  close(): Promise<void>;
}

const tlsOptions = (tls: MockTls) => ({
  key: tls.key,
  cert: tls.cert,
  ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
  requestCert: tls.requestCert ?? false,
  rejectUnauthorized: tls.requestCert ?? false,
});

/** Listens on `host:port` (port 0: any free one) and resolves once it does. */
export async function listen(host: string, port: number, tls: MockTls | undefined, handler: RequestListener): Promise<Listener> {
  const server = tls ? createHttpsServer(tlsOptions(tls), handler) : createServer(handler);
  const sockets = new Set<Socket>();
  let handshakes = 0;
  let accepted = 0;
  server.on('secureConnection', () => handshakes++);
  server.on('tlsClientError', () => {});
  server.on('connection', (socket: Socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const close = (): Promise<void> =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  return {
    port: bound,
    connections: () => accepted,
    handshakes: () => handshakes,
    openConnections: () => sockets.size,
    dropConnections: () => {
      for (const s of sockets) s.destroy();
    },
    setTls: (next) => {
      if ('setSecureContext' in server) server.setSecureContext(tlsOptions(next));
    },
    setDown: (down) => (down ? close() : new Promise<void>((resolve) => void server.listen(bound, host, resolve))),
    close,
  };
}
