import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll } from 'vitest';

/** A server on loopback for one test file and an undici Agent to reach it; `origin` is set once it listens. */
export interface LoopbackEndpoint {
  origin: string;
  agent: Agent;
}

/**
 * Starts an HTTP server on loopback before the file's tests and closes it after them. Each request
 * is handed to `onRequest` with its whole body read.
 */
export function loopbackEndpoint(onRequest: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): LoopbackEndpoint {
  const endpoint = { origin: '', agent: undefined as unknown as Agent };
  let server: Server;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => onRequest(req, res, Buffer.concat(chunks)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    endpoint.agent = new Agent();
  });
  afterAll(async () => {
    await endpoint.agent.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return endpoint;
}
