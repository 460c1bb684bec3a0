/**
 * The mock's token endpoint (RFC 6749 §4.4, client credentials): known clients by secret (in the
 * body or Basic), assertion clients through `client-assertions.ts`, opaque tokens of a fixed
 * lifetime, queued faults, and a record of every request (never a secret or an assertion).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AssertionClients } from './client-assertions.js';
import { json } from './respond.js';

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

/** The next answer(s) of the token endpoint, in place of the normal one. */
export type TokenFault =
  | { status: number; body?: string | object; headers?: Record<string, string>; times?: number }
  | { kind: 'hang'; times?: number }
  | { kind: 'reset'; times?: number }
  | { kind: 'delay'; ms: number; times?: number };

/** A token the mock issued. */
export interface IssuedToken {
  clientId: string;
  expiresAt: number;
}

export interface TokenEndpointOptions {
  /** Client id to secret; changed by `setClientSecret`. */
  clients: Map<string, string>;
  ttlS: number;
  assertionClients: AssertionClients;
  /** Receives `token` (TokenRequestRecord) for every request. */
  events: EventEmitter;
  /** The token endpoint's own URL: the audience a private_key_jwt assertion must name. */
  audience: () => string;
}

export interface TokenEndpoint {
  /** Answers one token request whose body was read in full. */
  handle(req: IncomingMessage, res: ServerResponse, body: Buffer): void;
  readonly requests: TokenRequestRecord[];
  /** The issued token a request presents as `Bearer`, expired or not. */
  presented(req: IncomingMessage): IssuedToken | undefined;
  issuedTokens(): string[];
  setFault(fault: TokenFault): void;
  clearFaults(): void;
  revokeAll(): void;
}

interface TokenRequest {
  form: URLSearchParams;
  clientId: string | undefined;
  secret: string | undefined;
  authMethod: TokenRequestRecord['authMethod'];
}

const NO_STORE = { 'cache-control': 'no-store' };

/** Reads who the client says it is: id and secret from the body or from Basic, or an assertion. */
function readTokenRequest(req: IncomingMessage, body: Buffer): TokenRequest {
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
  if (form.has('client_assertion')) authMethod = 'client_assertion';
  return { form, clientId, secret, authMethod };
}

function recordOf(req: IncomingMessage, request: TokenRequest): TokenRequestRecord {
  const assertion = request.form.get('client_assertion') ?? undefined;
  return {
    at: Date.now(),
    clientId: request.clientId,
    authMethod: request.authMethod,
    scope: request.form.get('scope') ?? undefined,
    headers: req.headers,
    form: [...request.form].filter(([k]) => k !== 'client_secret' && k !== 'client_assertion'),
    assertionSha256: assertion === undefined ? undefined : createHash('sha256').update(assertion).digest('hex'),
  };
}

/** Creates the token endpoint with no token issued and no fault queued. */
export function createTokenEndpoint(options: TokenEndpointOptions): TokenEndpoint {
  const { clients, ttlS, assertionClients } = options;
  const tokens = new Map<string, IssuedToken>();
  const issued: string[] = [];
  const faults: (TokenFault & { left: number })[] = [];
  const requests: TokenRequestRecord[] = [];

  const grant = (res: ServerResponse, clientId: string): void => {
    const token = `mock_${randomBytes(16).toString('hex')}`;
    tokens.set(token, { clientId, expiresAt: Date.now() + ttlS * 1000 });
    issued.push(token);
    json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: ttlS }, NO_STORE);
  };

  const answer = (res: ServerResponse, { form, clientId, secret, authMethod }: TokenRequest): void => {
    if (form.get('grant_type') !== 'client_credentials') {
      json(res, 400, { error: form.has('grant_type') ? 'unsupported_grant_type' : 'invalid_request' }, NO_STORE);
    } else if (authMethod === 'client_assertion' || assertionClients.isFederated(clientId)) {
      // A federated client has no secret: only its issuer's assertion is accepted.
      void assertionClients.verify(form, options.audience()).then((v) => {
        if (v.ok) grant(res, v.clientId!);
        else json(res, 401, { error: 'invalid_client', error_description: v.description }, NO_STORE);
      });
    } else if (clientId === undefined || secret === undefined) {
      json(res, 400, { error: 'invalid_request', error_description: 'client_id and client_secret are required' }, NO_STORE);
    } else if (clients.get(clientId) !== secret) {
      const challenge: Record<string, string> = authMethod === 'basic' ? { 'www-authenticate': 'Basic realm="tickets"' } : {};
      json(res, 401, { error: 'invalid_client', error_description: 'client authentication failed' }, { ...NO_STORE, ...challenge });
    } else grant(res, clientId);
  };

  /** Plays the queued fault, if any; true when it answered (or dropped) the request. */
  const playFault = (req: IncomingMessage, res: ServerResponse, request: TokenRequest): boolean => {
    const fault = faults[0];
    if (!fault) return false;
    if (--fault.left <= 0) faults.shift();
    if (!('kind' in fault)) {
      const text = typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body ?? { error: 'server_error' });
      res.writeHead(fault.status, { 'content-type': 'application/json', ...NO_STORE, ...fault.headers });
      res.end(text);
    } else if (fault.kind === 'reset') req.socket.destroy();
    else if (fault.kind === 'delay') setTimeout(() => answer(res, request), fault.ms);
    return true;
  };

  return {
    handle(req, res, body) {
      const request = readTokenRequest(req, body);
      const record = recordOf(req, request);
      requests.push(record);
      options.events.emit('token', record);
      if (!playFault(req, res, request)) answer(res, request);
    },
    requests,
    presented: (req) => tokens.get(/^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? ''),
    issuedTokens: () => [...issued],
    setFault: (fault) => void faults.push({ ...fault, left: fault.times ?? 1 }),
    clearFaults: () => void faults.splice(0),
    revokeAll: () => tokens.clear(),
  };
}
