/**
 * The mock's token endpoint (RFC 6749 §4.4, client credentials): known clients by secret (in the
 * body or Basic) or by an assertion signed with their secret (`client_secret_jwt`), assertion
 * clients through `client-assertions.ts`, opaque tokens of a fixed lifetime, queued faults, the
 * refusals of identity providers that answer otherwise than RFC 6749 §5.2 asks (a bare 403, a
 * scope required, Basic credentials compared without decoding), the scopes it knows (any other
 * is refused `invalid_scope`), and a record of every request (never a secret or an assertion).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isSecretJwt, type AssertionClients } from './client-assertions.js';
import type { DpopVerifier } from './dpop-verifier.js';
import { json } from './respond.js';

export interface TokenRequestRecord {
  at: number;
  clientId: string | undefined;
  authMethod: 'post' | 'basic' | 'none' | 'client_assertion' | 'client_secret_jwt';
  /** Whether a secret was sent (a `client_secret` field or a Basic password); its value is never kept. */
  secretSent: boolean;
  scope: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  /** Every form field as received, client_secret and client_assertion left out. */
  form: [string, string][];
  /** SHA-256 of the client assertion, when one was sent (tests tell assertions apart). */
  assertionSha256: string | undefined;
  /** A DPoP proof was sent: what its check found (the key's thumbprint, or the refusal's code). */
  dpop?: { ok: boolean; jkt?: string; error?: string };
}

/** The next answer(s) of the token endpoint, in place of the normal one. */
export type TokenFault =
  | { status: number; body?: string | object; headers?: Record<string, string>; times?: number }
  | { kind: 'hang'; times?: number }
  | { kind: 'reset'; times?: number }
  | { kind: 'delay'; ms: number; times?: number };

/**
 * How the token endpoint refuses a client, as identity providers differ. By default a wrong
 * secret gets 401 `invalid_client` (RFC 6749 §5.2).
 */
export interface TokenRefusalStyle {
  /** The status of a refusal (default 401). */
  status?: 400 | 401 | 403;
  /** Answer a refusal with an empty body: no error code at all. */
  bare?: boolean;
  /** Refuse a request without `scope` the same way as a wrong secret. */
  scopeRequired?: boolean;
  /** Compare Basic credentials as sent, without the form-decoding RFC 6749 §2.3.1 asks for. */
  basicAsSent?: boolean;
}

/** A token the mock issued. */
export interface IssuedToken {
  clientId: string;
  expiresAt: number;
  /** A DPoP-bound token: the thumbprint of the key it is bound to (`cnf.jkt`). */
  jkt?: string;
}

/** The token endpoint's DPoP behaviour (RFC 9449 §5, §8). */
export interface TokenDpopOptions {
  /** Checks each proof sent; its `requireNonce` makes the endpoint demand a nonce. */
  verifier: DpopVerifier;
  /** Answer a valid DPoP request with a Bearer token all the same (an identity provider without DPoP for this client). */
  bearerOnly?: boolean;
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
  refusal?: TokenRefusalStyle;
  dpop: TokenDpopOptions;
}

export interface TokenEndpoint {
  /** Answers one token request whose body was read in full. */
  handle(req: IncomingMessage, res: ServerResponse, body: Buffer): void;
  readonly requests: TokenRequestRecord[];
  /** The issued token a request presents as `Bearer` or `DPoP`, expired or not. */
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
  /** The thumbprint of a verified DPoP proof's key: the token is bound to it. */
  jkt?: string | undefined;
}

const NO_STORE = { 'cache-control': 'no-store' };

/** The scopes the mock grants; a request for any other is refused (RFC 6749 §5.2 `invalid_scope`). */
export const KNOWN_SCOPES: readonly string[] = ['tickets.read', 'tickets.write'];

/**
 * Why `scope` cannot be granted, or undefined: scopes are separated by spaces (RFC 6749 §3.3), so
 * `tickets.read,tickets.write` is one scope the mock does not know.
 */
function unknownScope(scope: string | null): string | undefined {
  if (scope === null) return undefined;
  const unknown = scope.split(' ').filter((s) => s !== '' && !KNOWN_SCOPES.includes(s));
  if (unknown.length === 0) return undefined;
  return (
    `unknown scope ${unknown.map((s) => JSON.stringify(s)).join(', ')}: this server grants ${KNOWN_SCOPES.join(' and ')}, ` +
    'separated by spaces (RFC 6749 section 3.3)'
  );
}

/** Reads who the client says it is: id and secret from the body or from Basic, or an assertion. */
function readTokenRequest(req: IncomingMessage, body: Buffer, basicAsSent: boolean): TokenRequest {
  const form = new URLSearchParams(body.toString('utf8'));
  let clientId = form.get('client_id') ?? undefined;
  let secret = form.get('client_secret') ?? undefined;
  let authMethod: TokenRequestRecord['authMethod'] = clientId !== undefined ? 'post' : 'none';
  const basic = /^Basic (\S+)$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const dec = (s: string) => (basicAsSent ? s : decodeURIComponent(s.replace(/\+/g, ' ')));
    clientId = dec(decoded.slice(0, colon));
    secret = dec(decoded.slice(colon + 1));
    authMethod = 'basic';
  }
  if (form.has('client_assertion')) authMethod = isSecretJwt(form.get('client_assertion')!) ? 'client_secret_jwt' : 'client_assertion';
  return { form, clientId, secret, authMethod };
}

function recordOf(req: IncomingMessage, request: TokenRequest): TokenRequestRecord {
  const assertion = request.form.get('client_assertion') ?? undefined;
  return {
    at: Date.now(),
    clientId: request.clientId,
    authMethod: request.authMethod,
    scope: request.form.get('scope') ?? undefined,
    secretSent: request.secret !== undefined,
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

  const dpop = options.dpop;
  /** With a nonce demanded, every answer carries the current one (RFC 9449 §8). */
  const nonceHeader = (): Record<string, string> => (dpop.verifier.requireNonce ? { 'dpop-nonce': dpop.verifier.nonce() } : {});
  /** The answer names the scope requested, as most identity providers' do (RFC 6749 §5.1 allows it). */
  const issue = (res: ServerResponse, clientId: string, jkt: string | undefined, scope: string | null): void => {
    const token = `mock_${randomBytes(16).toString('hex')}`;
    const bound = jkt !== undefined && dpop.bearerOnly !== true;
    tokens.set(token, { clientId, expiresAt: Date.now() + ttlS * 1000, ...(bound ? { jkt } : {}) });
    issued.push(token);
    const granted = scope === null ? {} : { scope };
    json(
      res,
      200,
      { access_token: token, token_type: bound ? 'DPoP' : 'Bearer', expires_in: ttlS, ...granted },
      { ...NO_STORE, ...nonceHeader() },
    );
  };

  const style = options.refusal ?? {};
  /** A refused client: 401 invalid_client, or as the configured style answers. */
  const refuse = (res: ServerResponse, authMethod: TokenRequest['authMethod'], description: string): void => {
    const status = style.status ?? 401;
    const challenge: Record<string, string> =
      authMethod === 'basic' && status === 401 ? { 'www-authenticate': 'Basic realm="tickets"' } : {};
    if (style.bare) {
      res.writeHead(status, { ...NO_STORE, ...challenge, 'content-length': '0' });
      res.end();
    } else json(res, status, { error: 'invalid_client', error_description: description }, { ...NO_STORE, ...challenge });
  };

  const answer = (res: ServerResponse, { form, clientId, secret, authMethod, jkt }: TokenRequest): void => {
    // The client is authenticated first, as an identity provider does; then what it asks for.
    const grant = (r: ServerResponse, id: string): void => {
      const refused = unknownScope(form.get('scope'));
      if (refused === undefined) issue(r, id, jkt, form.get('scope'));
      else json(r, 400, { error: 'invalid_scope', error_description: refused }, NO_STORE);
    };
    if (form.get('grant_type') !== 'client_credentials') {
      json(res, 400, { error: form.has('grant_type') ? 'unsupported_grant_type' : 'invalid_request' }, NO_STORE);
    } else if (style.scopeRequired && !form.has('scope')) {
      refuse(res, authMethod, 'scope is required');
    } else if (authMethod === 'client_secret_jwt') {
      void assertionClients
        .verifyWithSecret(form, options.audience(), (id) => clients.get(id))
        .then((v) => {
          if (v.ok) grant(res, v.clientId!);
          else refuse(res, authMethod, v.description ?? 'client authentication failed');
        });
    } else if (authMethod === 'client_assertion' || assertionClients.isFederated(clientId)) {
      // A federated client has no secret: only its issuer's assertion is accepted.
      void assertionClients.verify(form, options.audience()).then((v) => {
        if (v.ok) grant(res, v.clientId!);
        else json(res, 401, { error: 'invalid_client', error_description: v.description }, NO_STORE);
      });
    } else if (clientId === undefined || secret === undefined) {
      json(res, 400, { error: 'invalid_request', error_description: 'client_id and client_secret are required' }, NO_STORE);
    } else if (clients.get(clientId) !== secret) {
      refuse(res, authMethod, 'client authentication failed');
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

  /** RFC 9449 §5: a proof, when one is sent, is checked before anything else; a token is then bound to its key. */
  const answerWithProof = (req: IncomingMessage, res: ServerResponse, request: TokenRequest, record: TokenRequestRecord): void => {
    if (req.headers.dpop === undefined) return answer(res, request);
    void dpop.verifier.verify({ rawHeaders: req.rawHeaders, method: 'POST', url: options.audience() }).then((verdict) => {
      record.dpop = verdict.ok ? { ok: true, jkt: verdict.jkt } : { ok: false, error: verdict.error };
      if (verdict.ok) return answer(res, { ...request, jkt: verdict.jkt });
      const nonce: Record<string, string> = verdict.nonce === undefined ? {} : { 'dpop-nonce': verdict.nonce };
      json(
        res,
        400,
        { error: verdict.error === 'use_dpop_nonce' ? 'use_dpop_nonce' : 'invalid_dpop_proof', error_description: verdict.description },
        { ...NO_STORE, ...nonce },
      );
    });
  };

  return {
    handle(req, res, body) {
      const request = readTokenRequest(req, body, style.basicAsSent === true);
      const record = recordOf(req, request);
      requests.push(record);
      options.events.emit('token', record);
      if (!playFault(req, res, request)) answerWithProof(req, res, request, record);
    },
    requests,
    presented: (req) => tokens.get(/^(?:Bearer|DPoP) (\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? ''),
    issuedTokens: () => [...issued],
    setFault: (fault) => void faults.push({ ...fault, left: fault.times ?? 1 }),
    clearFaults: () => void faults.splice(0),
    revokeAll: () => tokens.clear(),
  };
}
