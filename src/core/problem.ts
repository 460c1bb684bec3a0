import type { ServerResponse } from 'node:http';
import {
  CredentialsRequiredError,
  InvalidClientError,
  MethodNotAllowedError,
  OverloadedError,
  ProxyError,
  TokenUnavailableError,
} from './errors.js';

/** RFC 9457 problem details, as the proxy answers them. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
}

const INTERNAL = { status: 500, title: 'Internal error', code: 'internal_error' } as const;

/**
 * The one mapping from an error to the proxy's HTTP answer: a {@link ProxyError} whose class has a
 * status is answered with its class's status, title and code, and its message as the detail.
 * Any other error becomes a 500 whose detail says nothing about the cause (it may hold
 * anything); the cause belongs in the log.
 */
export function problemFor(err: unknown): { problem: Problem; headers: Record<string, string> } {
  const kind = err instanceof ProxyError ? (err.constructor as typeof ProxyError) : undefined;
  const known = kind?.status === undefined ? undefined : { status: kind.status, title: kind.title, code: kind.code };
  const { status, title, code } = known ?? INTERNAL;
  const detail = known ? (err as ProxyError).message : 'The proxy failed to handle this request; see its log.';
  const headers: Record<string, string> = {
    'content-type': 'application/problem+json',
    'cache-control': 'no-store',
  };
  if (err instanceof TokenUnavailableError || err instanceof OverloadedError) headers['retry-after'] = String(err.retryAfterS);
  if (err instanceof MethodNotAllowedError) headers['allow'] = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
  if (err instanceof CredentialsRequiredError || err instanceof InvalidClientError) {
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
