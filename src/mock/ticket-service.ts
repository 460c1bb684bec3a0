/**
 * An embedded mock of the Ticket Service gateway (its interface document, and RFC 6749 for the
 * token endpoint): issues short-lived opaque tokens to known clients and serves tickets to
 * callers that hold a valid one. It backs `npm run demo`, the integration tests (with the fault
 * controls and request records below) and the benchmark.
 */
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { createAssertionClients, type AssertionClients } from './client-assertions.js';

/** The client the demo and `npm run mock` know: a throwaway pair, printed for the user to try. */
export const DEMO_CLIENT = { id: 'demo-client', secret: 'demo-secret' } as const;

export interface MockTicketServiceOptions {
  /** Client id to secret; default {@link DEMO_CLIENT}. */
  clients?: Record<string, string>;
  /** Lifetime of issued tokens; default 60 s. */
  tokenTtlS?: number;
  /** A path prefix before `/api/v1`, e.g. `/gw`; default none. */
  pathPrefix?: string;
  host?: string;
  port?: number;
  /** Serve HTTPS with this key and certificate (PEM); `requestCert` demands a client certificate signed by `ca`. */
  tls?: MockTls;
}

/** The mock's TLS material (PEM). */
export interface MockTls {
  key: string;
  cert: string;
  ca?: string;
  requestCert?: boolean;
}

export interface TokenRequestRecord {
  at: number;
  clientId: string | undefined;
  authMethod: 'post' | 'basic' | 'none' | 'client_assertion';
  scope: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  /** Every form field as received, client_secret and client_assertion left out. */
  form: [string, string][];
  /** SHA-256 of the client assertion, when one was sent (tests tell assertions apart). */
  assertionSha256: string | undefined;
}

export interface ApiRequestRecord {
  method: string;
  /** Path and query exactly as received. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** Header names and values as received, in order (`[name, value, ...]`). */
  rawHeaders: string[];
  bodyLength: number;
  bodySha256: string;
  aborted: boolean;
  tokenValid: boolean;
  /** The token was one the mock issued, past its expiry when the request arrived. */
  tokenExpired: boolean;
}

/** What the API answers while set, in place of the normal answer (soak faults). */
export type ApiFault = { kind: 'reset' } | { kind: 'delay'; ms: number };

/** The next answer(s) of the token endpoint, in place of the normal one. */
export type TokenFault =
  | { status: number; body?: string | object; headers?: Record<string, string>; times?: number }
  | { kind: 'hang'; times?: number }
  | { kind: 'reset'; times?: number }
  | { kind: 'delay'; ms: number; times?: number };

export interface MockTicketService {
  readonly url: string;
  readonly port: number;
  /** TCP connections accepted so far (keep-alive checks). */
  readonly connections: () => number;
  /** TLS handshakes completed so far (HTTPS mode). */
  readonly handshakes: () => number;
  /** HTTPS mode: new connections are served with this material (rotation tests). */
  setTls(tls: MockTls): void;
  /** Closes every open connection, so the next request needs a new one (and a new handshake). */
  dropConnections(): void;
  readonly tokenRequests: TokenRequestRecord[];
  readonly apiRequests: ApiRequestRecord[];
  /** Every token ever issued (tests search the proxy's output for them). */
  issuedTokens(): string[];
  /** Queues a fault for the next `times` (default 1, `Infinity` allowed) token requests. */
  setTokenFault(fault: TokenFault): void;
  clearTokenFaults(): void;
  setClientSecret(clientId: string, secret: string): void;
  /** private_key_jwt clients and federated clients (assertions from a trusted issuer). */
  readonly assertionClients: AssertionClients;
  /** Every token issued so far becomes invalid at once. */
  revokeAll(): void;
  /** While on, every API call is answered 401 whatever its token. */
  rejectAllTokens(on: boolean): void;
  /** Sets (or with undefined clears) a fault for every API request that follows. */
  setApiFault(fault: ApiFault | undefined): void;
  /** Stops listening and drops every connection (true), or listens again on the same port (false). */
  setDown(down: boolean): Promise<void>;
  /** Connections open right now. */
  openConnections(): number;
  /** Emits `request` (ApiRequestRecord) when an API request ends or aborts, and `token` (TokenRequestRecord). */
  readonly events: EventEmitter;
  close(): Promise<void>;
}

const TICKETS = [
  { id: 'TCK-1001', title: 'Printer on floor 3 jams on duplex', status: 'open', priority: 'normal' },
  { id: 'TCK-1002', title: 'VPN drops every 30 minutes', status: 'in_progress', priority: 'high' },
  { id: 'TCK-1003', title: 'New starter needs a laptop', status: 'open', priority: 'low' },
  { id: 'TCK-1004', title: 'Invoice export misses the VAT column', status: 'resolved', priority: 'normal' },
];

interface Issued {
  clientId: string;
  expiresAt: number;
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/** Starts the mock on loopback (port 0 by default) and resolves once it listens. */
export async function createMockTicketService(options: MockTicketServiceOptions = {}): Promise<MockTicketService> {
  const clients = new Map(Object.entries(options.clients ?? { [DEMO_CLIENT.id]: DEMO_CLIENT.secret }));
  const ttlS = options.tokenTtlS ?? 60;
  const prefix = (options.pathPrefix ?? '').replace(/\/$/, '');
  const api = `${prefix}/api/v1`;
  const tokens = new Map<string, Issued>();
  const issued: string[] = [];
  const faults: (TokenFault & { left: number })[] = [];
  const tokenRequests: TokenRequestRecord[] = [];
  const apiRequests: ApiRequestRecord[] = [];
  const events = new EventEmitter();
  const sockets = new Set<Socket>();
  let rejectAll = false;
  const assertionClients = createAssertionClients();
  let tokenUrl = '';
  let apiFault: ApiFault | undefined;

  const issue = (clientId: string): string => {
    const token = `mock_${randomBytes(16).toString('hex')}`;
    tokens.set(token, { clientId, expiresAt: Date.now() + ttlS * 1000 });
    issued.push(token);
    return token;
  };

  const valid = (req: IncomingMessage): Issued | undefined => {
    const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    const t = m ? tokens.get(m[1]!) : undefined;
    return t && t.expiresAt > Date.now() && !rejectAll ? t : undefined;
  };

  const handleToken = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    const form = new URLSearchParams(body.toString('utf8'));
    let clientId = form.get('client_id') ?? undefined;
    let secret = form.get('client_secret') ?? undefined;
    let authMethod: TokenRequestRecord['authMethod'] = clientId !== undefined ? 'post' : 'none';
    const basic = /^Basic (\S+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
      clientId = dec(decoded.slice(0, colon));
      secret = dec(decoded.slice(colon + 1));
      authMethod = 'basic';
    }
    const assertion = form.get('client_assertion') ?? undefined;
    if (assertion !== undefined) authMethod = 'client_assertion';
    const record: TokenRequestRecord = {
      at: Date.now(),
      clientId,
      authMethod,
      scope: form.get('scope') ?? undefined,
      headers: req.headers,
      form: [...form].filter(([k]) => k !== 'client_secret' && k !== 'client_assertion'),
      assertionSha256: assertion === undefined ? undefined : createHash('sha256').update(assertion).digest('hex'),
    };
    tokenRequests.push(record);
    events.emit('token', record);

    const fault = faults[0];
    if (fault) {
      if (--fault.left <= 0) faults.shift();
      if ('kind' in fault) {
        if (fault.kind === 'hang') return;
        if (fault.kind === 'reset') {
          req.socket.destroy();
          return;
        }
        setTimeout(() => answerToken(res, form, clientId, secret, authMethod), fault.ms);
        return;
      }
      const text = typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body ?? { error: 'server_error' });
      res.writeHead(fault.status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...fault.headers });
      res.end(text);
      return;
    }
    answerToken(res, form, clientId, secret, authMethod);
  };

  const answerToken = (
    res: ServerResponse,
    form: URLSearchParams,
    clientId: string | undefined,
    secret: string | undefined,
    authMethod: TokenRequestRecord['authMethod'],
  ): void => {
    const noStore = { 'cache-control': 'no-store' };
    if (form.get('grant_type') !== 'client_credentials') {
      json(res, 400, { error: form.has('grant_type') ? 'unsupported_grant_type' : 'invalid_request' }, noStore);
      return;
    }
    if (authMethod === 'client_assertion' || assertionClients.isFederated(clientId)) {
      // A federated client has no secret: only its issuer's assertion is accepted.
      void assertionClients.verify(form, tokenUrl).then((v) => {
        if (v.ok) json(res, 200, { access_token: issue(v.clientId!), token_type: 'Bearer', expires_in: ttlS }, noStore);
        else json(res, 401, { error: 'invalid_client', error_description: v.description }, noStore);
      });
      return;
    }
    if (clientId === undefined || secret === undefined) {
      json(res, 400, { error: 'invalid_request', error_description: 'client_id and client_secret are required' }, noStore);
      return;
    }
    if (clients.get(clientId) !== secret) {
      const challenge: Record<string, string> = authMethod === 'basic' ? { 'www-authenticate': 'Basic realm="tickets"' } : {};
      json(res, 401, { error: 'invalid_client', error_description: 'client authentication failed' }, { ...noStore, ...challenge });
      return;
    }
    json(res, 200, { access_token: issue(clientId), token_type: 'Bearer', expires_in: ttlS }, noStore);
  };

  const handleApi = (
    req: IncomingMessage,
    res: ServerResponse,
    record: ApiRequestRecord,
    rest: string,
    query: URLSearchParams,
    delayed = false,
  ): void => {
    const holder = valid(req);
    record.tokenValid = holder !== undefined;
    const presented = tokens.get(/^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
    record.tokenExpired = presented !== undefined && presented.expiresAt <= Date.now();
    if (apiFault?.kind === 'reset') {
      req.socket.destroy();
      return;
    }
    if (apiFault?.kind === 'delay' && !delayed) {
      const timer = setTimeout(() => handleApi(req, res, record, rest, query, true), apiFault.ms);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    if (!holder) {
      json(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer error="invalid_token"' });
      return;
    }
    if (rest === '/tickets' && (req.method === 'GET' || req.method === 'HEAD')) {
      // Mixed-case names, as many gateways write them: callers may look them up case-sensitively.
      json(res, 200, { workspace: holder.clientId, tickets: TICKETS }, { ETag: '"tickets-v1"', 'X-Ticket-Count': String(TICKETS.length) });
    } else if (rest === '/echo' || rest.startsWith('/echo/')) {
      json(res, 200, { method: req.method, url: req.url, headers: req.headers, bodyLength: record.bodyLength, bodySha256: record.bodySha256 });
    } else if (rest === '/upload') {
      json(res, 200, { length: record.bodyLength, sha256: record.bodySha256 });
    } else if (rest === '/download') {
      const total = Number(query.get('bytes') ?? 1024);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      let sent = 0;
      const pump = (): void => {
        while (sent < total) {
          const n = Math.min(chunk.length, total - sent);
          sent += n;
          if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    } else if (rest === '/slow') {
      const timer = setTimeout(() => json(res, 200, { slept: Number(query.get('ms')) }), Number(query.get('ms') ?? 1000));
      res.on('close', () => clearTimeout(timer));
    } else if (rest === '/hang') {
      // Never answers; the record shows whether the caller went away.
    } else if (rest === '/redirect') {
      res.writeHead(302, { location: query.get('to') ?? '/', 'content-length': '0' });
      res.end();
    } else if (rest === '/fail-midway') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '1000' });
      res.write(Buffer.alloc(100, 'y'), () => res.socket?.destroy());
    } else if (rest === '/headers') {
      const raw: string[] = [];
      for (const pair of query.getAll('set')) {
        const colon = pair.indexOf(':');
        raw.push(pair.slice(0, colon), pair.slice(colon + 1));
      }
      const body = '{}';
      raw.push('content-type', 'application/json', 'content-length', String(body.length));
      res.writeHead(200, raw);
      res.end(body);
    } else {
      json(res, 404, { error: 'not_found' });
    }
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    let length = 0;
    const isToken = path === `${api}/oauth2/token`;
    req.on('data', (c: Buffer) => {
      length += c.length;
      hash.update(c);
      if (isToken && length < 65536) chunks.push(c);
    });
    req.on('error', () => {});
    req.on('end', () => {
      if (isToken) {
        if (req.method !== 'POST') json(res, 405, { error: 'invalid_request' });
        else handleToken(req, res, Buffer.concat(chunks));
        return;
      }
      const record: ApiRequestRecord = {
        method: req.method ?? 'GET',
        url,
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        bodyLength: length,
        bodySha256: hash.digest('hex'),
        aborted: false,
        tokenValid: false,
        tokenExpired: false,
      };
      apiRequests.push(record);
      res.on('close', () => {
        if (!res.writableFinished) record.aborted = true;
        events.emit('request', record);
      });
      if (path === api || path.startsWith(`${api}/`)) handleApi(req, res, record, path.slice(api.length), query);
      else json(res, 404, { error: 'not_found' });
    });
  };
  const tlsOptions = (tls: MockTls) => ({
    key: tls.key,
    cert: tls.cert,
    ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
    requestCert: tls.requestCert ?? false,
    rejectUnauthorized: tls.requestCert ?? false,
  });
  const server = options.tls ? createHttpsServer(tlsOptions(options.tls), handler) : createServer(handler);
  let handshakes = 0;
  server.on('secureConnection', () => handshakes++);
  server.on('tlsClientError', () => {});
  let accepted = 0;
  server.on('connection', (socket: Socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  // The audience a private_key_jwt assertion must name.
  tokenUrl = `http://${options.host ?? '127.0.0.1'}:${port}${api}/oauth2/token`;

  return {
    url: `${options.tls ? 'https' : 'http'}://${options.host ?? '127.0.0.1'}:${port}${prefix}`,
    port,
    connections: () => accepted,
    handshakes: () => handshakes,
    dropConnections: () => {
      for (const s of sockets) s.destroy();
    },
    setTls: (tls) => {
      if ('setSecureContext' in server) server.setSecureContext(tlsOptions(tls));
    },
    tokenRequests,
    apiRequests,
    events,
    issuedTokens: () => [...issued],
    setTokenFault: (fault) => faults.push({ ...fault, left: fault.times ?? 1 }),
    clearTokenFaults: () => void faults.splice(0),
    setClientSecret: (id, secret) => void clients.set(id, secret),
    assertionClients,
    revokeAll: () => tokens.clear(),
    setApiFault: (fault) => {
      apiFault = fault;
    },
    setDown: (down) =>
      new Promise<void>((resolve) => {
        if (down) {
          server.close(() => resolve());
          for (const s of sockets) s.destroy();
        } else server.listen(port, options.host ?? '127.0.0.1', resolve);
      }),
    openConnections: () => sockets.size,
    rejectAllTokens: (on) => {
      rejectAll = on;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
