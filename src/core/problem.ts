import type { ServerResponse } from 'node:http';
import { ProxyError, TokenUnavailableError } from './errors.js';

/** RFC 9457 problem details, as the proxy answers them. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
}

const STATUS: Record<string, [number, string]> = {
  not_proxied: [404, 'Not proxied'],
  bad_path: [400, 'Bad path'],
  bad_request: [400, 'Bad request'],
  headers_too_large: [431, 'Request header fields too large'],
  method_not_allowed: [405, 'Method not allowed'],
  upgrade_not_supported: [501, 'Upgrade not supported'],
  token_unavailable: [503, 'Token unavailable'],
  upstream_unreachable: [502, 'Upstream unreachable'],
  upstream_disconnected: [502, 'Upstream disconnected'],
  upstream_timeout: [504, 'Upstream timeout'],
  invalid_client: [401, 'Invalid client'],
  credentials_required: [401, 'Credentials required'],
};

const INTERNAL: [number, string] = [500, 'Internal error'];

/**
 * The one mapping from an error to the proxy's HTTP answer. Unknown errors become a 500 whose
 * detail says nothing about the cause (it may hold anything); the cause belongs in the log.
 */
export function problemFor(err: unknown): { problem: Problem; headers: Record<string, string> } {
  const known = err instanceof ProxyError ? STATUS[err.code] : undefined;
  const [status, title] = known ?? INTERNAL;
  const code = known ? (err as ProxyError).code : 'internal_error';
  const detail = known ? (err as ProxyError).message : 'The proxy failed to handle this request; see its log.';
  const headers: Record<string, string> = {
    'content-type': 'application/problem+json',
    'cache-control': 'no-store',
  };
  if (err instanceof TokenUnavailableError) headers['retry-after'] = String(err.retryAfterS);
  if (code === 'method_not_allowed') headers['allow'] = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
  if (code === 'credentials_required' || code === 'invalid_client') {
    headers['www-authenticate'] = 'Basic realm="ticket-auth-proxy", charset="UTF-8"';
  }
  return { problem: { type: `urn:ticket-auth-proxy:problem:${code}`, title, status, detail, code }, headers };
}

/** Serialises a problem answer for a raw socket (used where no ServerResponse exists). */
export function rawProblemResponse(err: unknown): string {
  const { problem, headers } = problemFor(err);
  const body = JSON.stringify(problem);
  let head = `HTTP/1.1 ${problem.status} ${problem.title}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  return `${head}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/** Answers `res` with the problem for `err`, unless the answer has already started. */
export function sendProblem(res: ServerResponse, err: unknown): number {
  const { problem, headers } = problemFor(err);
  if (res.headersSent) {
    res.destroy();
    return problem.status;
  }
  const body = JSON.stringify(problem);
  headers['content-length'] = String(Buffer.byteLength(body));
  res.writeHead(problem.status, headers);
  res.end(body);
  return problem.status;
}
