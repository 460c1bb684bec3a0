/**
 * Faults a gateway makes, each reproduced by a gateway process the test controls on loopback
 * (test/helpers/raw-gateway.ts), whose own record of what it saw is the oracle: a body that goes
 * silent either way, a kept-alive connection closed under the next request, a connection reset
 * after the gateway read the request, a port nobody listens on, and idle connections kept too long.
 */
import { request as httpRequest } from 'node:http';
import { describe, expect } from 'vitest';
import { createDpopVerifier } from '../../src/mock/dpop-verifier.js';
import { closedPort, pollUntil } from '../helpers/index.js';
import { startRawGateway, type RawGateway, type RawGatewayOptions } from '../helpers/raw-gateway.js';
import { it, type StartMock, type StartStack, type Stack } from '../helpers/stack.js';

const SECRET = 'faults-secret-5d1e';

interface Exchange {
  status: number | undefined;
  body: string;
  /** The answer arrived whole; false when the connection ended first. */
  complete: boolean;
}

/**
 * One request on a connection of its own. `partialBody`: the body is announced with that many
 * more bytes than are written, and the request never ends. Rejects when the exchange has not
 * ended within `deadlineMs`.
 */
function exchange(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string; partialBody?: number; deadlineMs?: number },
): Promise<Exchange> {
  const deadlineMs = options.deadlineMs ?? 10_000;
  return new Promise((resolve, reject) => {
    let status: number | undefined;
    let body = '';
    let ended = false;
    const timer = setTimeout(() => {
      ended = true;
      req.destroy();
      reject(new Error(`the exchange did not end within ${deadlineMs} ms`));
    }, deadlineMs);
    const finish = (complete: boolean): void => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      resolve({ status, body, complete });
    };
    const text = options.body ?? '';
    const headers = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(text) + (options.partialBody ?? 0));
    const req = httpRequest(
      { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers, agent: false },
      (res) => {
        status = res.statusCode;
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => finish(res.complete));
        res.on('error', () => finish(false));
        res.on('close', () => finish(res.complete));
      },
    );
    req.on('error', () => finish(false));
    if (options.partialBody !== undefined) req.write(text);
    else req.end(text);
  });
}

/** A proxy in front of `gateway`, its tokens from a mock token endpoint of its own. */
async function proxyFor(stack: StartStack, mock: StartMock, gatewayUrl: string, env: Record<string, string> = {}): Promise<Stack> {
  const tokens = await mock({ clients: { client: SECRET } });
  return stack({ gateway: tokens, secret: SECRET, env: { BASE_URL: gatewayUrl, TOKEN_URL: `${tokens.url}/api/v1/oauth2/token`, ...env } });
}

const gateways: RawGateway[] = [];
async function rawGateway(options: RawGatewayOptions): Promise<RawGateway> {
  const g = await startRawGateway(options);
  gateways.push(g);
  return g;
}
it.afterEach(async () => {
  for (const g of gateways.splice(0)) await g.close();
});

const stalls = (s: Stack, direction: string): Promise<number> =>
  s.metric(new RegExp(`ticket_auth_proxy_upstream_stalls_total\\{direction="${direction}"\\} (\\d+)`));

describe('a body that goes silent', () => {
  it('closes the caller connection when the gateway stops halfway through its answer, with a warning and a count', async ({
    stack,
    mock,
  }) => {
    const g = await rawGateway({ act: () => ({ stallAfterHalf: 100 }) });
    const s = await proxyFor(stack, mock, g.url, { UPSTREAM_IDLE_TIMEOUT_MS: '500' });
    const res = await exchange(s.proxy.proxyPort, { path: '/api/v1/tickets?q=private-query', deadlineMs: 10_000 });
    expect(res.status).toBe(200);
    expect(res.complete).toBe(false);
    expect(res.body).toBe('x'.repeat(50));
    const warning = await s.proxy.waitForLog((l) => l.msg === 'the gateway answer went silent; closing the caller connection', 5_000);
    expect(warning).toMatchObject({ direction: 'response', method: 'GET', path: '/api/v1/tickets', idleMs: 500 });
    expect(JSON.stringify(warning)).not.toContain('private-query');
    expect(await stalls(s, 'response')).toBe(1);
    expect(await stalls(s, 'request')).toBe(0);
  });

  it('closes the caller connection when its request body stops halfway, with a warning and a count, and aborts the upstream request', async ({
    stack,
    mock,
  }) => {
    const g = await rawGateway({ act: () => ({ answer: 201 }) });
    const s = await proxyFor(stack, mock, g.url, { UPSTREAM_IDLE_TIMEOUT_MS: '500' });
    const res = await exchange(s.proxy.proxyPort, {
      method: 'POST',
      path: '/api/v1/tickets',
      body: 'y'.repeat(50),
      partialBody: 50,
      deadlineMs: 10_000,
    });
    expect(res.status).toBeUndefined();
    const warning = await s.proxy.waitForLog((l) => l.msg === 'the request body went silent; closing the caller connection', 5_000);
    expect(warning).toMatchObject({ direction: 'request', method: 'POST', path: '/api/v1/tickets' });
    expect(await stalls(s, 'request')).toBe(1);
    // The gateway never got a whole request, and its connection was closed by the proxy.
    expect(g.seen).toHaveLength(0);
    await pollUntil(() => g.closedByPeer.length === 1, { timeoutMs: 5_000 });
    expect(await s.metric(/ticket_auth_proxy_requests_total\{route="default",method="POST",code="408"\} (\d+)/)).toBe(1);
  });

  it('lets the gateway take longer than the idle timeout for its answer head, with a body or without', async ({ stack, mock }) => {
    const g = await rawGateway({ act: (r) => ({ answer: 200, body: `got ${r.body.length}`, delayMs: 1_000 }) });
    const s = await proxyFor(stack, mock, g.url, { UPSTREAM_IDLE_TIMEOUT_MS: '300' });
    const post = await exchange(s.proxy.proxyPort, { method: 'POST', path: '/api/v1/tickets', body: 'z'.repeat(20) });
    expect(post).toEqual({ status: 200, body: 'got 20', complete: true });
    const get = await exchange(s.proxy.proxyPort, { path: '/api/v1/tickets' });
    expect(get).toEqual({ status: 200, body: 'got 0', complete: true });
    expect(await stalls(s, 'request')).toBe(0);
    expect(await stalls(s, 'response')).toBe(0);
  });
});

describe('a kept-alive connection the gateway closes under the next request', () => {
  // Every connection's first request is answered (no Keep-Alive hint); the gateway closes the
  // connection when a second request arrives on it: the race with an idle timeout, made exact.
  const closeSecond: RawGatewayOptions = { act: (r) => (r.onConnection === 1 ? { answer: 200, body: `ok ${r.path}` } : { close: true }) };

  it('sends a GET again on a new connection, invisibly; a POST gets 502 upstream_disconnected and reaches the gateway once; a POST with an Idempotency-Key is sent again', async ({
    stack,
    mock,
  }) => {
    const g = await rawGateway(closeSecond);
    const s = await proxyFor(stack, mock, g.url);
    const port = s.proxy.proxyPort;
    const seen = (path: string) => g.seen.filter((r) => r.path === path);
    // Each case follows a warm-up that leaves one idle pooled connection for it to reuse.
    expect((await exchange(port, { path: '/api/v1/warm-1' })).status).toBe(200);
    const get = await exchange(port, { path: '/api/v1/tickets/7' });
    expect(get).toMatchObject({ status: 200, body: 'ok /api/v1/tickets/7', complete: true });
    expect(seen('/api/v1/tickets/7').map((r) => r.onConnection)).toEqual([2, 1]);

    expect((await exchange(port, { path: '/api/v1/warm-2' })).status).toBe(200);
    const post = await exchange(port, {
      method: 'POST',
      path: '/api/v1/tickets',
      body: '{"id":"p-1"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(post.status).toBe(502);
    const problem = JSON.parse(post.body) as { code: string; detail: string };
    expect(problem.code).toBe('upstream_disconnected');
    expect(problem.detail).toContain('may have acted on it');
    expect(seen('/api/v1/tickets').map((r) => r.body)).toEqual(['{"id":"p-1"}']);

    expect((await exchange(port, { path: '/api/v1/warm-3' })).status).toBe(200);
    const keyed = await exchange(port, {
      method: 'POST',
      path: '/api/v1/orders',
      body: '{"id":"p-2"}',
      headers: { 'idempotency-key': 'k-2' },
    });
    expect(keyed).toMatchObject({ status: 200, body: 'ok /api/v1/orders' });
    expect(seen('/api/v1/orders').map((r) => [r.body, r.headers['idempotency-key']])).toEqual([
      ['{"id":"p-2"}', 'k-2'],
      ['{"id":"p-2"}', 'k-2'],
    ]);
    // A retry is no 401 replay.
    expect(await s.metric(/ticket_auth_proxy_upstream_unauthorized_total\{route="default",replayed="true"\} (\d+)/)).toBe(0);
  });

  it('sends a GET again with a fresh DPoP proof for the same bound token, each proof valid where a strict verifier checks it', async ({
    stack,
    mock,
  }) => {
    const g = await rawGateway(closeSecond);
    const s = await proxyFor(stack, mock, g.url, { DPOP: 'on' });
    expect((await exchange(s.proxy.proxyPort, { path: '/api/v1/warm' })).status).toBe(200);
    expect(await exchange(s.proxy.proxyPort, { path: '/api/v1/tickets/8?full=1' })).toMatchObject({ status: 200, complete: true });
    const sends = g.seen.filter((r) => r.path === '/api/v1/tickets/8?full=1');
    expect(sends.map((r) => r.onConnection)).toEqual([2, 1]);
    const jkt = s.gateway.tokenRequests.map((r) => r.dpop?.jkt).find((k) => k !== undefined);
    expect(jkt).toBeDefined();
    // One verifier for both sends: it refuses a proof whose jti it has seen.
    const verifier = createDpopVerifier();
    for (const r of sends) {
      const [scheme, token] = r.headers.authorization!.split(' ');
      expect(scheme).toBe('DPoP');
      const verdict = await verifier.verify({
        rawHeaders: ['DPoP', r.headers.dpop!],
        method: 'GET',
        url: `${g.url}${r.path}`,
        accessToken: token,
        boundJkt: jkt,
      });
      expect(verdict).toEqual({ ok: true, jkt });
      s.mustNotLeak(token!, r.headers.dpop!);
    }
    expect(sends[0]!.headers.authorization).toBe(sends[1]!.headers.authorization);
    expect(sends[0]!.headers.dpop).not.toBe(sends[1]!.headers.dpop);
  });

  it('never sends a request again whose body is over REPLAY_BODY_LIMIT_BYTES, Idempotency-Key or not', async ({ stack, mock }) => {
    const g = await rawGateway(closeSecond);
    const s = await proxyFor(stack, mock, g.url, { REPLAY_BODY_LIMIT_BYTES: '16' });
    expect((await exchange(s.proxy.proxyPort, { path: '/api/v1/warm' })).status).toBe(200);
    const body = 'b'.repeat(64);
    const res = await exchange(s.proxy.proxyPort, {
      method: 'PUT',
      path: '/api/v1/tickets/9',
      body,
      headers: { 'idempotency-key': 'k-9' },
    });
    expect(res.status).toBe(502);
    expect((JSON.parse(res.body) as { code: string }).code).toBe('upstream_disconnected');
    expect(g.seen.filter((r) => r.path === '/api/v1/tickets/9').map((r) => r.body)).toEqual([body]);
  });

  it('answers a GET whose retry breaks too with 502 upstream_disconnected, after exactly two sends', async ({ stack, mock }) => {
    const g = await rawGateway({ act: () => ({ reset: true }) });
    const s = await proxyFor(stack, mock, g.url);
    const res = await exchange(s.proxy.proxyPort, { path: '/api/v1/tickets' });
    expect(res.status).toBe(502);
    expect((JSON.parse(res.body) as { code: string }).code).toBe('upstream_disconnected');
    expect(g.seen).toHaveLength(2);
  });
});

describe('a 502 says whether the gateway saw the request', () => {
  it('answers 502 upstream_disconnected to a POST the gateway read whole and then reset, sent once', async ({ stack, mock }) => {
    const g = await rawGateway({ act: () => ({ reset: true }) });
    const s = await proxyFor(stack, mock, g.url);
    const res = await exchange(s.proxy.proxyPort, { method: 'POST', path: '/api/v1/tickets', body: '{"id":"r-1"}' });
    expect(res.status).toBe(502);
    expect((JSON.parse(res.body) as { code: string }).code).toBe('upstream_disconnected');
    expect(g.seen.map((r) => r.body)).toEqual(['{"id":"r-1"}']);
  });

  it('answers 502 upstream_disconnected to a POST a plain-HTTP gateway read and hung up on, naming no certificate', async ({
    stack,
    mock,
  }) => {
    const g = await rawGateway({ act: () => ({ close: true }) });
    const s = await proxyFor(stack, mock, g.url);
    const res = await exchange(s.proxy.proxyPort, { method: 'POST', path: '/api/v1/tickets', body: '{"id":"r-2"}' });
    expect(res.status).toBe(502);
    const problem = JSON.parse(res.body) as { code: string; detail: string };
    expect(problem.code).toBe('upstream_disconnected');
    expect(problem.detail).toContain('the server closed the connection before answering');
    // No TLS on this connection: no certificate can be the reason.
    expect(problem.detail).not.toMatch(/certificate|TLS_CLIENT/);
    expect(g.seen.map((r) => r.body)).toEqual(['{"id":"r-2"}']);
  });

  it('answers 502 upstream_unreachable to an https BASE_URL at a plain-HTTP gateway: reached, no TLS, write http://', async ({
    stack,
    mock,
  }) => {
    const plain = await mock();
    const s = await proxyFor(stack, mock, plain.url.replace(/^http:/, 'https:'));
    const res = await exchange(s.proxy.proxyPort, { path: '/api/v1/tickets' });
    expect(res.status).toBe(502);
    const problem = JSON.parse(res.body) as { code: string; detail: string };
    expect(problem.code).toBe('upstream_unreachable');
    expect(problem.detail).toContain('the gateway does not speak TLS (ERR_SSL_WRONG_VERSION_NUMBER): it was reached');
    expect(problem.detail).toContain(
      'write http:// in BASE_URL (allowed for a loopback host, for another host with ALLOW_INSECURE_HTTP=true)',
    );
    expect(problem.detail).not.toContain('could not be reached');
  });

  it('answers 502 upstream_unreachable when nothing listens, for a GET and a POST alike', async ({ stack, mock }) => {
    const s = await proxyFor(stack, mock, `http://127.0.0.1:${await closedPort()}`);
    for (const method of ['GET', 'POST']) {
      const res = await exchange(s.proxy.proxyPort, { method, path: '/api/v1/tickets', ...(method === 'POST' ? { body: '{}' } : {}) });
      expect(res.status).toBe(502);
      const problem = JSON.parse(res.body) as { code: string; detail: string };
      expect(problem.code).toBe('upstream_unreachable');
      expect(problem.detail).toContain('ECONNREFUSED');
    }
  });
});

describe('idle connections to the gateway', () => {
  it('closes an idle connection itself when the gateway sends no Keep-Alive hint (well before 60 s)', async ({ stack, mock }) => {
    const g = await rawGateway({ act: () => ({ answer: 200 }) });
    const s = await proxyFor(stack, mock, g.url);
    expect((await exchange(s.proxy.proxyPort, { path: '/api/v1/tickets' })).status).toBe(200);
    await pollUntil(() => g.closedByPeer.some((c) => c.requests === 1), { timeoutMs: 9_000, intervalMs: 100 });
  });

  it('does not reuse a connection past the hint less a margin: with Keep-Alive: timeout=1 every request gets its own', async ({
    stack,
    mock,
  }) => {
    const g = await rawGateway({ act: () => ({ answer: 200, keepAlive: 1 }), idleCloseMs: 1_000 });
    const s = await proxyFor(stack, mock, g.url);
    for (let i = 0; i < 5; i++) expect((await exchange(s.proxy.proxyPort, { path: `/api/v1/tickets/${i}` })).status).toBe(200);
    expect(g.seen.map((r) => r.onConnection)).toEqual([1, 1, 1, 1, 1]);
  });

  it('reuses a connection within the hint', async ({ stack, mock }) => {
    const g = await rawGateway({ act: () => ({ answer: 200, keepAlive: 30 }) });
    const s = await proxyFor(stack, mock, g.url);
    for (let i = 0; i < 3; i++) expect((await exchange(s.proxy.proxyPort, { path: `/api/v1/tickets/${i}` })).status).toBe(200);
    expect(g.connections()).toBe(1);
  });

  it('loses no GET sent as the gateway closes an idle connection (1 s, no hint)', async ({ stack, mock }) => {
    let closing: (() => void) | undefined;
    // The request leaves as the gateway decides to close the connection, and reaches it before the close.
    const g = await rawGateway({ act: () => ({ answer: 200 }), idleCloseMs: 1_000, closeLagMs: 100, onIdleClose: () => closing?.() });
    const s = await proxyFor(stack, mock, g.url);
    const port = s.proxy.proxyPort;
    const statuses: (number | undefined)[] = [];
    statuses.push((await exchange(port, { path: '/api/v1/warm/0' })).status);
    for (let i = 1; i <= 5 && !statuses.some((status) => status !== 200); i++) {
      const path = `/api/v1/tickets/${i}`;
      const sent = new Promise<Exchange>((resolve) => {
        closing = () => {
          closing = undefined;
          resolve(exchange(port, { path }));
        };
      });
      statuses.push((await sent).status);
      const sightings = g.seen.filter((r) => r.path === path);
      if (sightings.length === 2) {
        // Sent again, on a connection of its own, which the proxy closes: the pool needs a new one to race.
        await pollUntil(() => g.closedByPeer.some((c) => c.connection === sightings[1]!.connection), { timeoutMs: 5_000 });
        statuses.push((await exchange(port, { path: `/api/v1/warm/${i}` })).status);
      }
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });
});
