import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BadPathError,
  BadRequestError,
  ConfigError,
  CredentialsRequiredError,
  InvalidClientError,
  MethodNotAllowedError,
  NotProxiedError,
  OverloadedError,
  ProxyError,
  TokenUnavailableError,
  UpgradeNotSupportedError,
  UpstreamDisconnectedError,
  UpstreamTimeoutError,
  UpstreamUnreachableError,
} from '../../src/core/errors.js';
import { problemFor, rawProblemResponse, sendProblem } from '../../src/core/problem.js';
import * as core from '../../src/core/errors.js';
import * as token from '../../src/token/errors.js';

describe('problemFor', () => {
  it.each([
    [new NotProxiedError('only paths under /api/v1/ are forwarded'), 404, 'not_proxied'],
    [new BadPathError('dot segment in path'), 400, 'bad_path'],
    [new BadRequestError('malformed request'), 400, 'bad_request'],
    [new MethodNotAllowedError('TRACE is not forwarded'), 405, 'method_not_allowed'],
    [new UpgradeNotSupportedError('no upgrades'), 501, 'upgrade_not_supported'],
    [new TokenUnavailableError('no valid token', 3), 503, 'token_unavailable'],
    [new OverloadedError('near the memory limit'), 503, 'overloaded'],
    [new UpstreamUnreachableError('ECONNREFUSED'), 502, 'upstream_unreachable'],
    [new UpstreamDisconnectedError('ECONNRESET; the gateway may have acted on it'), 502, 'upstream_disconnected'],
    [new UpstreamTimeoutError('no headers within 30000 ms'), 504, 'upstream_timeout'],
    [new InvalidClientError('the token endpoint rejected the credentials'), 401, 'invalid_client'],
    [new CredentialsRequiredError('send Basic credentials'), 401, 'credentials_required'],
  ])('answers %s with %i and code %s', (err, status, code) => {
    const { problem, headers } = problemFor(err);
    expect(problem).toEqual({
      type: `urn:ticket-auth-proxy:problem:${code}`,
      title: expect.any(String),
      status,
      detail: err.message,
      code,
    });
    expect(problem.title).not.toBe('');
    expect(headers['content-type']).toBe('application/problem+json');
    expect(headers['cache-control']).toBe('no-store');
  });

  it('sends Retry-After in whole seconds, at least 1, with token_unavailable', () => {
    expect(problemFor(new TokenUnavailableError('x', 12)).headers['retry-after']).toBe('12');
    expect(problemFor(new TokenUnavailableError('x', 0.2)).headers['retry-after']).toBe('1');
    expect(problemFor(new TokenUnavailableError('x', -4)).headers['retry-after']).toBe('1');
    expect(problemFor(new TokenUnavailableError('x', 59.1)).headers['retry-after']).toBe('60');
    expect(problemFor(new UpstreamTimeoutError('x')).headers['retry-after']).toBeUndefined();
  });

  it('sends Retry-After: 1 with overloaded: the memory is sampled ten times a second near its limit', () => {
    expect(problemFor(new OverloadedError('x')).headers['retry-after']).toBe('1');
  });

  it('sends Allow with method_not_allowed and a Basic challenge with the credential errors', () => {
    expect(problemFor(new MethodNotAllowedError('x')).headers.allow).toMatch(/GET/);
    expect(problemFor(new MethodNotAllowedError('x')).headers.allow).not.toMatch(/CONNECT|TRACE/);
    expect(problemFor(new InvalidClientError('x')).headers['www-authenticate']).toMatch(/^Basic realm=/);
    expect(problemFor(new CredentialsRequiredError('x')).headers['www-authenticate']).toMatch(/^Basic realm=/);
    expect(problemFor(new NotProxiedError('x')).headers['www-authenticate']).toBeUndefined();
  });

  it.each([
    ['a plain Error', new Error('ECONNRESET at 10.1.2.3 with secret s3cr3t')],
    ['a ProxyError without a mapped code', new ProxyError('internal s3cr3t')],
    ['a ConfigError', new ConfigError(['CLIENT_ID s3cr3t'])],
    ['a TokenFetchError', new token.TokenFetchError('rejected', 'token endpoint answered 401 s3cr3t')],
    ['a thrown string', 's3cr3t'],
  ])('answers %s with a 500 that says nothing of the cause', (_what, err) => {
    const { problem, headers } = problemFor(err);
    expect(problem.status).toBe(500);
    expect(problem.code).toBe('internal_error');
    expect(JSON.stringify(problem)).not.toContain('s3cr3t');
    expect(headers['content-type']).toBe('application/problem+json');
  });
});

describe('the error classes', () => {
  const classes = [
    ...Object.values(core).filter((v) => typeof v === 'function'),
    ...Object.values(token).filter((v) => typeof v === 'function'),
  ] as (typeof ProxyError)[];

  it('are named after their class, and carry their class code, each set once in the base class', () => {
    // Every class whose constructor takes more than a message and options, with a sample of its own.
    const special = new Set<unknown>([core.TokenUnavailableError, core.ConfigError, ...Object.values(token)]);
    const refused = new token.TokenFetchError('rejected', 'x');
    const samples: ProxyError[] = [
      ...classes.filter((kind) => !special.has(kind)).map((kind) => new kind('x')),
      new core.TokenUnavailableError('x', 1),
      new core.ConfigError(['x']),
      refused,
      new token.TokenRefusedError(refused, { credentials: undefined, alternative: undefined, scopeSet: false }),
      new token.DpopBearerError(200),
      new token.ClientAssertionError('network_error', 'x'),
      new token.IssuerMetadataError('network_error', 'x', 'y'),
    ];
    expect(new Set(samples.map((err) => err.constructor))).toEqual(new Set(classes));
    for (const err of samples) {
      const kind = err.constructor as typeof ProxyError;
      expect(err.name).toBe(kind.name);
      expect(err.code).toBe(kind.code);
      expect(String(err)).toMatch(new RegExp(`^${kind.name}: `));
    }
  });

  it('answers an error class problem.ts was never told of, from its status, title and code alone', () => {
    class TeapotError extends ProxyError {
      static override readonly code = 'teapot';
      static override readonly status = 418;
      static override readonly title = "I'm a teapot";
    }
    const { problem } = problemFor(new TeapotError('short and stout'));
    expect(problem).toEqual({
      type: 'urn:ticket-auth-proxy:problem:teapot',
      title: "I'm a teapot",
      status: 418,
      detail: 'short and stout',
      code: 'teapot',
    });
    // A subclass answers as its parent unless it says otherwise.
    class LidError extends TeapotError {}
    expect(problemFor(new LidError('tip me over')).problem).toMatchObject({ status: 418, code: 'teapot', detail: 'tip me over' });
  });
});

describe('rawProblemResponse', () => {
  it('serialises a complete HTTP/1.1 answer that closes the connection', () => {
    const raw = rawProblemResponse(new UpgradeNotSupportedError('WebSocket upgrades are not forwarded'));
    const [head, body] = raw.split('\r\n\r\n') as [string, string];
    const [statusLine, ...fields] = head.split('\r\n');
    expect(statusLine).toBe('HTTP/1.1 501 Upgrade not supported');
    const headers = Object.fromEntries(fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 2)]));
    expect(headers).toMatchObject({ 'content-type': 'application/problem+json', connection: 'close' });
    expect(Number(headers['content-length'])).toBe(Buffer.byteLength(body));
    expect(JSON.parse(body)).toMatchObject({ status: 501, code: 'upgrade_not_supported', detail: 'WebSocket upgrades are not forwarded' });
  });
});

describe('sendProblem', () => {
  let server: Server;
  let base: string;
  const errors: Record<string, unknown> = {
    '/unavailable': new TokenUnavailableError('no valid token within 5000 ms', 7),
    '/not-proxied': new NotProxiedError('only paths under /api/v1/ are forwarded with caf\u00e9'),
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/started') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
        sendProblem(res, new UpstreamUnreachableError('reset'));
        return;
      }
      sendProblem(res, errors[req.url!]);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers with the status, the problem+json body and Retry-After', async () => {
    const res = await fetch(`${base}/unavailable`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toEqual({
      type: 'urn:ticket-auth-proxy:problem:token_unavailable',
      title: 'Token unavailable',
      status: 503,
      detail: 'no valid token within 5000 ms',
      code: 'token_unavailable',
    });
  });

  it('counts the body length in bytes', async () => {
    const res = await fetch(`${base}/not-proxied`);
    const text = await res.text();
    expect(res.status).toBe(404);
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text).detail).toContain('caf\u00e9');
  });

  it('destroys the connection instead when the answer has already started', async () => {
    // the caller never gets a complete answer: a truncated body must not look complete
    await expect(fetch(`${base}/started`).then((res) => res.text())).rejects.toThrow();
  });
});
