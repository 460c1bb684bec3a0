import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
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

/** The header names of a raw response head, less those each hop sets for itself. */
function headerNames(head: string): string[] {
  return head
    .split('\r\n')
    .slice(1)
    .filter((l) => l.includes(':'))
    .map((l) => l.slice(0, l.indexOf(':')))
    .filter((n) => !/^(date|connection|keep-alive)$/i.test(n));
}

describe('response header names', () => {
  it('arrive in the letter case the gateway sent, as curl -sI shows them', async () => {
    const through = await run('curl', ['-sI', `${proxy.proxyUrl}/api/v1/tickets`]);
    const direct = await run('curl', ['-sI', '-H', `Authorization: Bearer ${await directToken()}`, `${gateway.url}/api/v1/tickets`]);
    expect(through).toMatch(/^ETag: "tickets-v1"\r$/m);
    expect(through).toMatch(/^X-Ticket-Count: 4\r$/m);
    expect(headerNames(through)).toEqual(headerNames(direct));
  });

  it('look the same to Python http.client as a direct call, but for the token', async () => {
    const script = [
      'import http.client, json, sys',
      'def names(port, path, auth):',
      '    c = http.client.HTTPConnection("127.0.0.1", port)',
      '    c.request("GET", path, headers=({"Authorization": auth} if auth else {}))',
      '    r = c.getresponse(); r.read()',
      '    return [r.status, r.getheader("ETag"), [n for n, _ in r.getheaders() if n.lower() not in ("date", "connection", "keep-alive")]]',
      'print(json.dumps([names(int(sys.argv[1]), "/api/v1/tickets", None), names(int(sys.argv[2]), sys.argv[3], sys.argv[4])]))',
    ].join('\n');
    const base = new URL(gateway.url).pathname.replace(/\/$/, '');
    const out = JSON.parse(await run('python3', ['-c', script, String(proxy.proxyPort), String(gateway.port), `${base}/api/v1/tickets`, `Bearer ${await directToken()}`])) as unknown[];
    expect(out[0]).toEqual([200, '"tickets-v1"', expect.arrayContaining(['ETag', 'X-Ticket-Count'])]);
    expect(out[0]).toEqual(out[1]);
  });
});

describe('HEAD requests', () => {
  it('reuse one pooled upstream connection, as curl -I with ten URLs on one connection shows', async () => {
    // Warm the pool so the count below is of reuse, not of the first connect.
    expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    const before = gateway.connections();
    const urls = Array.from({ length: 10 }, (_, i) => `${proxy.proxyUrl}/api/v1/tickets?head=${i}`);
    const out = await run('curl', ['-sI', ...urls]);
    expect(out.match(/^HTTP\/1\.1 200 /gm)).toHaveLength(10);
    expect(gateway.connections() - before).toBeLessThanOrEqual(1);
  });
});

describe('Java 17 HttpClient (offers h2c) and HttpURLConnection', () => {
  it('see the proxy as the gateway itself, but for the token', async () => {
    const before = gateway.apiRequests.length;
    const source = fileURLToPath(new URL('java/Clients.java', import.meta.url));
    // One JVM start for all four calls; C1 only: the calls are few, the start is what costs.
    const out = await run('java', ['-XX:TieredStopAtLevel=1', '-Xshare:auto', source, proxy.proxyUrl, gateway.url, await directToken()]);
    const lines = out.trim().split('\n').map((l) => l.split(' '));
    const by = (client: string, target: string): string[] => lines.find((l) => l[0] === client && l[1] === target)!.slice(2);
    expect(by('HttpClient', 'proxy')).toEqual(['200', 'HTTP_1_1', '"tickets-v1"', 'true']);
    expect(by('HttpURLConnection', 'proxy')).toEqual(['200', 'HTTP_1_1', '"tickets-v1"', 'true']);
    expect(by('HttpClient', 'proxy')).toEqual(by('HttpClient', 'gateway'));
    expect(by('HttpURLConnection', 'proxy')).toEqual(by('HttpURLConnection', 'gateway'));
    // The h2c offer stayed with the proxy.
    const direct = `Bearer ${await directToken()}`;
    const forwarded = gateway.apiRequests
      .slice(before)
      .filter((r) => r.headers['user-agent']?.toString().startsWith('Java-http-client') && r.headers.authorization !== direct);
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]!.headers.upgrade).toBeUndefined();
    expect(forwarded[0]!.headers['http2-settings']).toBeUndefined();
  }, 30_000);
});

let token: string | undefined;
/** A token of the mock's own, for the same call made straight to the gateway. */
async function directToken(): Promise<string> {
  if (token !== undefined) return token;
  const res = await fetch(`${gateway.url}/api/v1/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'client', client_secret: SECRET }),
  });
  token = ((await res.json()) as { access_token: string }).access_token;
  return token;
}
