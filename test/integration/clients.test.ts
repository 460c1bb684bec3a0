import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, rawRequest, startProxy, type ProxyHandle } from '../helpers/index.js';

const SECRET = 'clients-secret-7c1d';
let gateway: MockTicketService;
let proxy: ProxyHandle;

beforeAll(async () => {
  gateway = await createMockTicketService({ clients: { client: SECRET } });
  proxy = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET });
  await pollUntil(async () => (await fetch(`${proxy.adminUrl}/readyz`)).status === 200, { timeoutMs: 10_000 });
});
afterAll(async () => {
  await proxy?.stop();
  await gateway?.close();
});

/** Writes raw bytes and reads everything until the proxy closes the connection. */
function rawUntilClose(raw: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxy.proxyPort, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connection still open after ${timeoutMs} ms; read: ${Buffer.concat(chunks).toString('latin1')}`));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.write(raw);
  });
}

function statuses(response: string): number[] {
  return [...response.matchAll(/(?:^|\r\n|\})HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 20_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${cmd}: ${err.message} ${stderr}`)) : resolve(stdout)));
  });
}

describe('an h2c upgrade offer (curl --http2, Java HttpClient)', () => {
  it('is answered over HTTP/1.1 and its headers do not travel on', async () => {
    const before = gateway.apiRequests.length;
    const out = await run('curl', ['-si', '--http2', `${proxy.proxyUrl}/api/v1/tickets`]);
    expect(out).toMatch(/^HTTP\/1\.1 200 /);
    expect(out).toContain('TCK-1001');
    const sent = gateway.apiRequests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers.upgrade).toBeUndefined();
    expect(sent[0]!.headers['http2-settings']).toBeUndefined();
  });

  it('drops HTTP2-Settings even when Connection does not name it', async () => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(proxy.proxyPort, 'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n');
    expect(res).toMatch(/^HTTP\/1\.1 200 /);
    const sent = gateway.apiRequests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers['http2-settings']).toBeUndefined();
  });

  it('still answers a WebSocket upgrade with 501 and forwards nothing', async () => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(proxy.proxyPort, 'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
    expect(res).toMatch(/^HTTP\/1\.1 501 /);
    expect(res).toContain('"code":"upgrade_not_supported"');
    expect(gateway.apiRequests.length).toBe(before);
  });
});

describe('a raw # in the target', () => {
  it.each([['/api/v1/oauth2#/token'], ['/api/v1/..#x'], ['/api/v1/tickets#frag'], ['/api/v1/tickets?q=a#b']])('refuses %s with 400 bad_path and forwards nothing', async (target) => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(proxy.proxyPort, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(res).toMatch(/^HTTP\/1\.1 400 /);
    expect(res).toContain('"code":"bad_path"');
    expect(gateway.apiRequests.length).toBe(before);
  });
});

describe('a connection the proxy decided to close', () => {
  it('answers a forwarded POST before refusing the bytes after it', async () => {
    const before = gateway.apiRequests.length;
    const res = await rawUntilClose('POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcdXYZ\r\n\r\n');
    // The gateway executed the POST, so its answer reaches the caller before the refusal.
    expect(statuses(res)).toEqual([200, 400]);
    expect(gateway.apiRequests.slice(before).map((r) => r.method)).toEqual(['POST']);
    expect(res).toContain('application/problem+json');
  });

  it.each([
    ['after a 404 not_proxied with an unread body', 'POST /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /api/v1/tickets?pipelined HTTP/1.1\r\nHost: x\r\n\r\n', [404]],
    ['after a 400 bad_path with an unread body', 'POST /api/v1/../x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /api/v1/tickets?pipelined HTTP/1.1\r\nHost: x\r\n\r\n', [400]],
    ['after a request with Connection: close', 'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /api/v1/tickets?pipelined HTTP/1.1\r\nHost: x\r\n\r\n', [200]],
  ])('forwards nothing pipelined %s', async (_name, raw, expected) => {
    const before = gateway.apiRequests.length;
    const res = await rawUntilClose(raw);
    expect(statuses(res)).toEqual(expected);
    const sent = gateway.apiRequests.slice(before);
    expect(sent.filter((r) => r.url.includes('pipelined'))).toEqual([]);
    expect(sent.length).toBe(expected.filter((s) => s === 200).length);
  });

  it('still answers every request of an ordinary pipeline', async () => {
    const one = 'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\n\r\n';
    const res = await rawUntilClose(`${one}${one}GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(statuses(res)).toEqual([200, 200, 200]);
  });
});

describe('refusals of the HTTP parser', () => {
  it('answers a request head over MAX_HEADER_BYTES with 431 headers_too_large problem+json', async () => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(proxy.proxyPort, `GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`);
    expect(res).toMatch(/^HTTP\/1\.1 431 /);
    expect(res).toContain('application/problem+json');
    expect(res).toContain('"code":"headers_too_large"');
    expect(gateway.apiRequests.length).toBe(before);
  });

  it('answers raw non-ASCII bytes in a query with 400 bad_request and forwards the percent-encoded form', async () => {
    const refused = await rawRequest(proxy.proxyPort, Buffer.from('GET /api/v1/echo?q=\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1'));
    expect(refused).toMatch(/^HTTP\/1\.1 400 /);
    expect(refused).toContain('"code":"bad_request"');
    const res = await fetch(`${proxy.proxyUrl}/api/v1/echo?q=%C3%A9`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { url: string }).url).toBe('/api/v1/echo?q=%C3%A9');
  });
});
