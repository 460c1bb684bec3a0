/**
 * An embedded mock of the Ticket Service gateway: issues short-lived opaque tokens to known
 * clients and serves tickets to callers that hold a valid one. It backs `npm run demo`, the
 * integration tests (with the fault controls and request records below) and the benchmark.
 * The parts it plays have files of their own: the token endpoint (`token-endpoint.ts`), client
 * assertions (`client-assertions.ts`), the API (`api.ts`) and the listener (`listener.ts`).
 */
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createApi, type ApiFault, type ApiHandler, type ApiRequestRecord } from './api.js';
import { createAssertionClients, type AssertionClients } from './client-assertions.js';
import { createDpopVerifier, type DpopVerifier } from './dpop-verifier.js';
import { createMockIssuer, type MockIssuer } from './issuer.js';
import { listen, type MockTls } from './listener.js';
import { json } from './respond.js';
import {
  createTokenEndpoint,
  type TokenEndpoint,
  type TokenFault,
  type TokenRefusalStyle,
  type TokenRequestRecord,
} from './token-endpoint.js';

export type { ApiFault, ApiRequestRecord } from './api.js';
export type { IssuerDocuments, IssuerLists, MockIssuer } from './issuer.js';
export type { MockTls } from './listener.js';
export type { TokenFault, TokenRefusalStyle, TokenRequestRecord } from './token-endpoint.js';

/** The client the demo and `npm run mock` know: a throwaway pair, printed for the user to try. */
export const DEMO_CLIENT = { id: 'demo-client', secret: 'demo-secret' } as const;

export interface MockTicketServiceOptions {
  /** Told of each API call that carried a W3C `traceparent` (the demo prints it); default silent. */
  log?: (line: string) => void;
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
  /** How the token endpoint refuses a client (a bare 403, a scope required...); default 401 `invalid_client`. */
  tokenRefusal?: TokenRefusalStyle;
  /**
   * DPoP (RFC 9449): a proof sent to the token endpoint is always checked and binds the token
   * (`token_type: DPoP`), and the API checks every DPoP request strictly. `tokenNonce` and
   * `gatewayNonce` make the token endpoint or the API demand a nonce; `bearerOnly` answers a valid
   * DPoP token request with a Bearer token (an identity provider without DPoP for the client).
   */
  dpop?: { tokenNonce?: boolean; gatewayNonce?: boolean; bearerOnly?: boolean };
  /** The path of the issuer identifier after the origin (`/realms/tickets`); default none (the origin is the issuer). */
  issuerPath?: string;
}

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
  /** The DPoP proof checks of the token endpoint and of the API (their `requireNonce`, `nonce()`, `rotateNonce()`). */
  readonly dpop: { readonly token: DpopVerifier; readonly gateway: DpopVerifier };
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
  /** The mock as an issuer: its metadata documents, and where they say the token endpoint is. */
  readonly issuer: MockIssuer;
  /** Emits `request` (ApiRequestRecord) when an API request ends or aborts, and `token` (TokenRequestRecord). */
  readonly events: EventEmitter;
  close(): Promise<void>;
}

/**
 * Routes a request once its body is read: the issuer's metadata, the token endpoint (404 at its
 * first path once it moved), the API under `/api/v1`, or 404. Every API request is recorded, and
 * emitted as `request` when it ends or aborts.
 */
function router(
  api: string,
  issuer: MockIssuer,
  tokenEndpoint: TokenEndpoint,
  serveApi: ApiHandler,
  apiRequests: ApiRequestRecord[],
  events: EventEmitter,
) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    let length = 0;
    const isToken = path === issuer.tokenPath;
    const movedAway = path === `${api}/oauth2/token` && !isToken;
    req.on('data', (c: Buffer) => {
      length += c.length;
      hash.update(c);
      if (isToken && length < 65536) chunks.push(c);
    });
    req.on('error', () => {});
    req.on('end', () => {
      if (movedAway) {
        json(res, 404, { error: 'not_found' });
        return;
      }
      if (req.method === 'GET' && issuer.handle(path, res)) return;
      if (isToken) {
        if (req.method !== 'POST') json(res, 405, { error: 'invalid_request' });
        else tokenEndpoint.handle(req, res, Buffer.concat(chunks));
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
      if (path === api || path.startsWith(`${api}/`)) serveApi(req, res, record, path.slice(api.length), query);
      else json(res, 404, { error: 'not_found' });
    });
  };
}

/** Starts the mock on loopback (port 0 by default) and resolves once it listens. */
export async function createMockTicketService(options: MockTicketServiceOptions = {}): Promise<MockTicketService> {
  const clients = new Map(Object.entries(options.clients ?? { [DEMO_CLIENT.id]: DEMO_CLIENT.secret }));
  const host = options.host ?? '127.0.0.1';
  const prefix = (options.pathPrefix ?? '').replace(/\/$/, '');
  const api = `${prefix}/api/v1`;
  const events = new EventEmitter();
  const issuer = createMockIssuer(() => new URL(url).origin, options.issuerPath ?? '', `${api}/oauth2/token`);
  const assertionClients = createAssertionClients();
  let url = '';
  const dpop = {
    token: createDpopVerifier({ requireNonce: options.dpop?.tokenNonce ?? false }),
    gateway: createDpopVerifier({ requireNonce: options.dpop?.gatewayNonce ?? false }),
  };
  const tokenEndpoint = createTokenEndpoint({
    dpop: { verifier: dpop.token, bearerOnly: options.dpop?.bearerOnly ?? false },
    clients,
    ttlS: options.tokenTtlS ?? 60,
    assertionClients,
    events,
    // The audience a private_key_jwt assertion must name: this endpoint, as the client reaches it.
    audience: () => `${new URL(url).origin}${issuer.tokenPath}`,
    ...(options.tokenRefusal === undefined ? {} : { refusal: options.tokenRefusal }),
  });
  let rejectAll = false;
  let apiFault: ApiFault | undefined;
  const serveApi = createApi({
    presented: tokenEndpoint.presented,
    rejectAll: () => rejectAll,
    fault: () => apiFault,
    dpop: dpop.gateway,
    origin: () => new URL(url).origin,
    log: options.log,
  });
  const apiRequests: ApiRequestRecord[] = [];
  const listener = await listen(host, options.port ?? 0, options.tls, router(api, issuer, tokenEndpoint, serveApi, apiRequests, events));
  url = `${options.tls ? 'https' : 'http'}://${host}:${listener.port}${prefix}`;

  return {
    url,
    port: listener.port,
    connections: listener.connections,
    handshakes: listener.handshakes,
    dropConnections: listener.dropConnections,
    setTls: listener.setTls,
    tokenRequests: tokenEndpoint.requests,
    apiRequests,
    events,
    issuedTokens: tokenEndpoint.issuedTokens,
    setTokenFault: tokenEndpoint.setFault,
    clearTokenFaults: tokenEndpoint.clearFaults,
    setClientSecret: (id, secret) => void clients.set(id, secret),
    assertionClients,
    dpop,
    revokeAll: tokenEndpoint.revokeAll,
    setApiFault: (fault) => {
      apiFault = fault;
    },
    issuer,
    setDown: listener.setDown,
    openConnections: listener.openConnections,
    rejectAllTokens: (on) => {
      rejectAll = on;
    },
    close: listener.close,
  };
}
