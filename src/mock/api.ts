/**
 * The mock's ticket API under `/api/v1`: answers callers that present a valid token the mock
 * issued, and 401 `invalid_token` to the others. Besides the tickets, routes that tests and the
 * benchmark use to see what arrived (echo, upload), to stream (download), to wait (slow, hang),
 * and to fail (redirect, fail-midway, headers as given).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dpopChallenge, type DpopVerdict, type DpopVerifier } from './dpop-verifier.js';
import { json } from './respond.js';
import type { IssuedToken } from './token-endpoint.js';

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
  /** The request carried `Authorization: DPoP` or a DPoP-bound token: what the proof check found. */
  dpop?: { ok: boolean; jkt?: string; error?: string };
}

/** What the API answers while set, in place of the normal answer (soak faults). */
export type ApiFault = { kind: 'reset' } | { kind: 'delay'; ms: number };

export interface ApiOptions {
  /** The issued token a request presents, expired or not. */
  presented(req: IncomingMessage): IssuedToken | undefined;
  /** While true, every call is answered 401 whatever its token. */
  rejectAll(): boolean;
  fault(): ApiFault | undefined;
  /** Checks the proofs of DPoP requests; its `requireNonce` makes the API demand a nonce. */
  dpop: DpopVerifier;
  /** The origin the API is reached at: a proof's `htu` must name it. */
  origin(): string;
  /** Told of each call that carried a `traceparent`: the trace continues here (the demo prints it). */
  log?: ((line: string) => void) | undefined;
}

/** One API call that presented a valid token. */
interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  record: ApiRequestRecord;
  query: URLSearchParams;
  workspace: string;
}

const TICKETS = [
  { id: 'TCK-1001', title: 'Printer on floor 3 jams on duplex', status: 'open', priority: 'normal' },
  { id: 'TCK-1002', title: 'VPN drops every 30 minutes', status: 'in_progress', priority: 'high' },
  { id: 'TCK-1003', title: 'New starter needs a laptop', status: 'open', priority: 'low' },
  { id: 'TCK-1004', title: 'Invoice export misses the VAT column', status: 'resolved', priority: 'normal' },
];

const ROUTES: Record<string, (call: Call) => void> = {
  '/tickets': ({ req, res, workspace }) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 404, { error: 'not_found' });
    // Mixed-case names, as many gateways write them: callers may look them up case-sensitively.
    json(res, 200, { workspace, tickets: TICKETS }, { ETag: '"tickets-v1"', 'X-Ticket-Count': String(TICKETS.length) });
  },
  '/echo': ({ req, res, record }) =>
    json(res, 200, {
      method: req.method,
      url: req.url,
      headers: req.headers,
      bodyLength: record.bodyLength,
      bodySha256: record.bodySha256,
    }),
  '/upload': ({ res, record }) => json(res, 200, { length: record.bodyLength, sha256: record.bodySha256 }),
  '/download': ({ res, query }) => download(res, Number(query.get('bytes') ?? 1024)),
  '/slow': ({ res, query }) => {
    const timer = setTimeout(() => json(res, 200, { slept: Number(query.get('ms')) }), Number(query.get('ms') ?? 1000));
    res.on('close', () => clearTimeout(timer));
  },
  // Never answers; the record shows whether the caller went away.
  '/hang': () => {},
  '/redirect': ({ res, query }) => {
    res.writeHead(302, { location: query.get('to') ?? '/', 'content-length': '0' });
    res.end();
  },
  '/fail-midway': ({ res }) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '1000' });
    res.write(Buffer.alloc(100, 'y'), () => res.socket?.destroy());
  },
  '/headers': ({ res, query }) => {
    const raw: string[] = [];
    for (const pair of query.getAll('set')) {
      const colon = pair.indexOf(':');
      raw.push(pair.slice(0, colon), pair.slice(colon + 1));
    }
    raw.push('content-type', 'application/json', 'content-length', '2');
    res.writeHead(200, raw);
    res.end('{}');
  },
};

/** Streams `total` bytes, minding back-pressure. */
function download(res: ServerResponse, total: number): void {
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
}

/** Answers one API call whose body was read; `rest` is the path below `/api/v1`. */
export type ApiHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  record: ApiRequestRecord,
  rest: string,
  query: URLSearchParams,
) => void;

/**
 * RFC 9449 §7: a request with `Authorization: DPoP`, or presenting a DPoP-bound token, is checked
 * strictly (proof, `ath`, the token's `cnf.jkt`); a bound token presented as `Bearer` is refused.
 * Undefined when the request may go on; else the 401 is sent and the record tells why.
 */
async function refusedProof(
  options: ApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
  record: ApiRequestRecord,
  token: IssuedToken | undefined,
): Promise<boolean> {
  const [scheme = '', value] = (req.headers.authorization ?? '').split(' ');
  const isDpop = scheme.toLowerCase() === 'dpop';
  if (!isDpop && token?.jkt === undefined) return false;
  const verdict = await options.dpop.verify({
    rawHeaders: req.rawHeaders,
    method: req.method ?? 'GET',
    url: `${options.origin()}${req.url ?? '/'}`,
    accessToken: value,
    boundJkt: token?.jkt,
  });
  record.dpop = verdict.ok ? { ok: isDpop, jkt: verdict.jkt } : { ok: false, error: verdict.error };
  if (verdict.ok && isDpop) return false;
  const refusal: Extract<DpopVerdict, { ok: false }> = verdict.ok
    ? { ok: false, error: 'invalid_token', description: 'a DPoP-bound token presented as Bearer' }
    : verdict;
  if (verdict.ok) record.dpop.error = 'invalid_token';
  const nonce: Record<string, string> = refusal.nonce === undefined ? {} : { 'dpop-nonce': refusal.nonce };
  json(res, 401, { error: refusal.error }, { 'www-authenticate': dpopChallenge(refusal), ...nonce });
  return true;
}

/** Creates the API's handler. */
export function createApi(options: ApiOptions): ApiHandler {
  const serve = (
    req: IncomingMessage,
    res: ServerResponse,
    record: ApiRequestRecord,
    rest: string,
    query: URLSearchParams,
    delayed = false,
    proven = false,
  ): void => {
    const presented = options.presented(req);
    const traceparent = req.headers.traceparent;
    if (options.log !== undefined && typeof traceparent === 'string' && !delayed && !proven) {
      options.log(`mock: ${req.method} /api/v1${rest} continues trace ${traceparent}\n`);
    }
    if (!proven && !delayed && (presented?.jkt !== undefined || /^dpop /i.test(req.headers.authorization ?? ''))) {
      void refusedProof(options, req, res, record, presented).then((refused) => {
        if (!refused) serve(req, res, record, rest, query, false, true);
      });
      return;
    }
    const holder = presented && presented.expiresAt > Date.now() && !options.rejectAll() ? presented : undefined;
    record.tokenValid = holder !== undefined;
    record.tokenExpired = presented !== undefined && presented.expiresAt <= Date.now();
    const fault = options.fault();
    if (fault?.kind === 'reset') return void req.socket.destroy();
    if (fault?.kind === 'delay' && !delayed) {
      const timer = setTimeout(() => serve(req, res, record, rest, query, true), fault.ms);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    if (!holder) return json(res, 401, { error: 'invalid_token' }, { 'www-authenticate': 'Bearer error="invalid_token"' });
    const name = rest.startsWith('/echo/') ? '/echo' : rest;
    const route = Object.hasOwn(ROUTES, name) ? ROUTES[name] : undefined;
    if (route) route({ req, res, record, query, workspace: holder.clientId });
    else json(res, 404, { error: 'not_found' });
  };
  return serve;
}
