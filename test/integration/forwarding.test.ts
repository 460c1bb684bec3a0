import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import { describe, expect } from 'vitest';
import { Agent, request } from 'undici';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, rawBody, rawRequest, type ProxyHandle } from '../helpers/index.js';
import { sharedStack } from '../helpers/stack.js';

// The stack's teardown checks that neither the secret nor any token appears in anything the proxy printed.
const it = sharedStack({
  clientId: 'fwd-client',
  secret: 'fwd-secret-3b9f1c',
  mock: { pathPrefix: '/gw' },
  env: (gateway) => ({ BASE_URL: `${gateway.url}/`, UPSTREAM_TIMEOUT_MS: '1500', LOG_LEVEL: 'debug', ACCESS_LOG: 'true' }),
});
let gateway: MockTicketService;
let proxy: ProxyHandle;
let agent: Agent;

it.beforeAll(({ shared }) => {
  ({ gateway, proxy } = shared);
  agent = new Agent({ keepAliveTimeout: 1000 });
});
it.afterAll(async () => {
  await agent?.close();
});

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await request(`${proxy.proxyUrl}${path}`, { dispatcher: agent, headers });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

describe('forwarding', () => {
  it('returns the ticket list with a token the caller never sent', async () => {
    const res = await get('/api/v1/tickets');
    expect(res.status).toBe(200);
    const body = JSON.parse(res.text) as unknown;
    expect(Array.isArray(body) ? body : (body as { tickets: unknown[] }).tickets).not.toHaveLength(0);
    const seen = gateway.apiRequests.at(-1)!;
    expect(seen.tokenValid).toBe(true);
  });

  it('forwards the path under the base URL prefix with the query string byte for byte', async () => {
    const query = '?a=1&b=%2F..%2f&c=%zz&&d=%C3%A9&e=/../x';
    const res = await rawRequest(proxy.proxyPort, `GET /api/v1/echo/x.y${query} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    expect(res).toMatch(/^HTTP\/1\.1 200/);
    const body = JSON.parse(rawBody(res)) as { url: string };
    expect(body.url).toBe(`/gw/api/v1/echo/x.y${query}`);
  });

  it('forwards exactly /api/v1 and refuses everything outside it with 404 not_proxied', async () => {
    const before = gateway.apiRequests.length;
    const inside = await get('/api/v1');
    expect(inside.headers['content-type']).not.toBe('application/problem+json');
    expect(gateway.apiRequests.length).toBe(before + 1);
    expect(gateway.apiRequests.at(-1)!.url).toBe('/gw/api/v1');
    for (const path of ['/', '/api', '/api/v2/tickets', '/api/v10', '/metrics', '/gw/api/v1/tickets']) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.json()).toMatchObject({ status: 404, code: 'not_proxied' });
    }
  });

  it('never forwards the token endpoint', async () => {
    const before = gateway.tokenRequests.length;
    for (const path of ['/api/v1/oauth2/token', '/api/v1/oauth2', '/api/v1/OAuth2/token', '/api/v1/%6fauth2/token']) {
      const res = await rawRequest(proxy.proxyPort, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      expect(res, path).toMatch(/^HTTP\/1\.1 404/);
      expect(res).toContain('"code":"not_proxied"');
    }
    expect(gateway.tokenRequests.length).toBe(before);
  });

  it.each([
    '/api/v1/../admin',
    '/api/v1/./tickets',
    '/api/v1/%2e%2e/x',
    '/api/v1/%2E/tickets',
    '/api/v1/a%2fb',
    '/api/v1/a%5Cb',
    '/api/v1/a\\b',
    '/api/v1/tickets%00',
    '/api/v1//tickets',
    '/api/v1/..;/x',
    'http://evil.example/api/v1/tickets',
  ])('answers 400 bad_path for %s and forwards nothing', async (target) => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(proxy.proxyPort, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(res).toMatch(/^HTTP\/1\.1 400/);
    expect(res).toContain('application/problem+json');
    expect(res).toContain('"code":"bad_path"');
    expect(gateway.apiRequests.length).toBe(before);
  });

  it('answers 405 to CONNECT and TRACE and 501 to a WebSocket upgrade', async () => {
    const connect = await rawRequest(proxy.proxyPort, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(connect).toMatch(/^HTTP\/1\.1 405/);
    expect(connect).toContain('"code":"method_not_allowed"');
    const trace = await rawRequest(proxy.proxyPort, 'TRACE /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(trace).toMatch(/^HTTP\/1\.1 405/);
    const upgrade = await rawRequest(
      proxy.proxyPort,
      'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    expect(upgrade).toMatch(/^HTTP\/1\.1 501/);
    expect(upgrade).toContain('"code":"upgrade_not_supported"');
  });

  it("replaces the caller's Authorization, drops hop-by-hop and proxy headers, and keeps the rest", async () => {
    const res = await rawRequest(
      proxy.proxyPort,
      'GET /api/v1/echo HTTP/1.1\r\nHost: caller.local\r\nAuthorization: Bearer caller-token\r\nProxy-Authorization: Basic eDp5\r\n' +
        'Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nX-Custom: Kept Value\r\nAccept: application/json\r\n\r\n',
    );
    expect(res).toMatch(/^HTTP\/1\.1 200/);
    const seen = gateway.apiRequests.at(-1)!;
    const headers = seen.headers as Record<string, string>;
    expect(headers.authorization).toMatch(/^Bearer /);
    expect(headers.authorization).not.toBe('Bearer caller-token');
    expect(seen.tokenValid).toBe(true);
    expect(headers['proxy-authorization']).toBeUndefined();
    expect(headers['x-hop']).toBeUndefined();
    expect(headers['keep-alive']).toBeUndefined();
    expect(headers.te).toBeUndefined();
    expect(headers.host).toBe(new URL(gateway.url).host);
    expect(headers['x-custom']).toBe('Kept Value');
    expect(headers.accept).toBe('application/json');
    expect(Object.keys(headers).filter((h) => h.startsWith('x-forwarded'))).toEqual([]);
  });

  it('passes response headers back less the hop-by-hop ones', async () => {
    const res = await get(
      '/api/v1/headers?set=X-Kept:yes&set=Connection:X-Drop&set=X-Drop:no&set=Keep-Alive:timeout%3D9&set=Set-Cookie:a%3D1&set=Set-Cookie:b%3D2',
    );
    expect(res.status).toBe(200);
    expect(res.headers['x-kept']).toBe('yes');
    expect(res.headers['x-drop']).toBeUndefined();
    expect(res.headers['set-cookie']).toEqual(['a=1', 'b=2']);
  });

  it('rewrites a Location into the base URL to the origin the caller used, and leaves others alone', async () => {
    const inside = await get(`/api/v1/redirect?to=${encodeURIComponent(`${gateway.url}/api/v1/tickets?page=2`)}`, {
      host: 'app.local:8180',
    });
    expect(inside.status).toBe(302);
    expect(inside.headers.location).toBe('http://app.local:8180/api/v1/tickets?page=2');
    const outside = await get(`/api/v1/redirect?to=${encodeURIComponent('https://elsewhere.example/x')}`);
    expect(outside.headers.location).toBe('https://elsewhere.example/x');
  });

  it('answers Expect: 100-continue and streams the body on', async () => {
    const body = Buffer.alloc(300_000, 7);
    const result = await new Promise<{ status: number; continued: boolean; text: string }>((resolve, reject) => {
      let continued = false;
      const req = httpRequest(
        `${proxy.proxyUrl}/api/v1/upload`,
        { method: 'POST', headers: { expect: '100-continue', 'content-length': body.length } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, continued, text }));
        },
      );
      req.on('continue', () => {
        continued = true;
        req.end(body);
      });
      req.on('error', reject);
    });
    expect(result.continued).toBe(true);
    expect(result.status).toBe(200);
    expect(JSON.parse(result.text)).toMatchObject({ length: body.length, sha256: createHash('sha256').update(body).digest('hex') });
  });

  it('streams a 200 MB download with the proxy holding little of it in memory', async () => {
    const size = 200 * 1024 * 1024;
    const peakKb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${proxy.child.pid}/status`, 'utf8'))![1]);
    const before = peakKb();
    const res = await request(`${proxy.proxyUrl}/api/v1/download?bytes=${size}`, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    let received = 0;
    for await (const chunk of res.body) received += (chunk as Buffer).length;
    expect(received).toBe(size);
    // Chunks wait for the garbage collector, which V8 runs about every 64 MB of released buffers:
    // the peak grows by a bounded amount whatever the size, far below the body's 200 MB.
    expect((peakKb() - before) * 1024).toBeLessThan(128 * 1024 * 1024);
  });

  it('streams a 100 MB upload to the gateway intact, holding little of it in memory', async () => {
    const size = 100 * 1024 * 1024;
    const chunk = Buffer.alloc(1024 * 1024, 3);
    const peakKb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${proxy.child.pid}/status`, 'utf8'))![1]);
    const before = peakKb();
    const body = Readable.from(
      (function* () {
        for (let sent = 0; sent < size; sent += chunk.length) yield chunk;
      })(),
    );
    const res = await request(`${proxy.proxyUrl}/api/v1/upload`, { dispatcher: agent, method: 'PUT', body });
    expect(res.statusCode).toBe(200);
    const hash = createHash('sha256');
    for (let i = 0; i < size / chunk.length; i++) hash.update(chunk);
    expect(await res.body.json()).toEqual({ length: size, sha256: hash.digest('hex') });
    expect((peakKb() - before) * 1024).toBeLessThan(128 * 1024 * 1024);
  });

  it('keeps upstream connections alive and reuses them', async () => {
    const before = gateway.connections();
    for (let i = 0; i < 20; i++) expect((await get('/api/v1/tickets')).status).toBe(200);
    expect(gateway.connections() - before).toBeLessThanOrEqual(1);
  });

  it('aborts the upstream request when the caller disconnects', async () => {
    const controller = new AbortController();
    const pending = request(`${proxy.proxyUrl}/api/v1/hang`, { dispatcher: agent, signal: controller.signal }).catch((e: Error) => e);
    await pollUntil(() => gateway.apiRequests.some((r) => r.url.endsWith('/hang')), { timeoutMs: 5000 });
    controller.abort();
    await pending;
    await pollUntil(() => gateway.apiRequests.some((r) => r.url.endsWith('/hang') && r.aborted), { timeoutMs: 5000 });
  });

  it('answers 504 upstream_timeout when the gateway sends no headers in time', async () => {
    const res = await get('/api/v1/slow?ms=4000');
    expect(res.status).toBe(504);
    expect(res.json()).toMatchObject({ code: 'upstream_timeout', status: 504 });
  });

  it('closes the caller connection when the gateway fails midway, never sending a body that looks complete', async () => {
    const outcome = await request(`${proxy.proxyUrl}/api/v1/fail-midway`, { dispatcher: agent })
      .then((res) => res.body.text().then(() => 'complete' as const))
      .catch((err: Error) => err);
    expect(outcome).toBeInstanceOf(Error);
  });

  it('keeps serving after all of the above', async () => {
    const res = await get('/api/v1/tickets');
    expect(res.status).toBe(200);
  });

  it('counts every answer by method and code, its own errors included', async () => {
    const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    expect(text).toMatch(/ticket_auth_proxy_requests_total\{route="default",method="GET",code="200"\} \d+/);
    expect(text).toMatch(/ticket_auth_proxy_requests_total\{route="default",method="GET",code="400"\} \d+/);
    expect(text).toMatch(/ticket_auth_proxy_requests_total\{route="default",method="GET",code="404"\} \d+/);
    expect(text).toMatch(/ticket_auth_proxy_requests_total\{route="default",method="GET",code="504"\} \d+/);
    expect(text).not.toContain('/api/v1');
  });

  it('writes an access log line per request without the query string', async () => {
    await get('/api/v1/tickets?secret-query=1');
    const line = await proxy.waitForLog((l) => l.msg === 'request' && l.path === '/api/v1/tickets' && l.status === 200, 5000);
    expect(line).toMatchObject({ method: 'GET' });
    expect(proxy.output()).not.toContain('secret-query');
  });
});

describe('an unreachable gateway', () => {
  it('answers 502 upstream_unreachable and keeps serving', async ({ stack }) => {
    const { proxy: dead } = await stack({
      clientId: 'c',
      mock: { tokenTtlS: 60 },
      env: (token) => ({ BASE_URL: 'http://127.0.0.1:9', TOKEN_URL: `${token.url}/api/v1/oauth2/token` }),
    });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${dead.proxyUrl}/api/v1/tickets`, { method: i ? 'POST' : 'GET', body: i ? 'x=1' : undefined });
      expect(res.status).toBe(502);
      expect(await res.json()).toMatchObject({ code: 'upstream_unreachable', status: 502 });
    }
  });
});
