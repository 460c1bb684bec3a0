import { describe, expect } from 'vitest';
import { rawUntilClose, statuses } from '../helpers/clients.js';
import { sharedStack } from '../helpers/stack.js';

const it = sharedStack({ mock: { tokenTtlS: 60 } });

describe('a connection the proxy decided to close', () => {
  it('answers a forwarded POST before refusing the bytes after it', async ({ shared: { gateway, proxy } }) => {
    const before = gateway.apiRequests.length;
    const res = await rawUntilClose(proxy.proxyPort, 'POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcdXYZ\r\n\r\n');
    // The gateway executed the POST, so its answer reaches the caller before the refusal.
    expect(statuses(res)).toEqual([200, 400]);
    expect(gateway.apiRequests.slice(before).map((r) => r.method)).toEqual(['POST']);
    expect(res).toContain('application/problem+json');
  });

  it.for([
    [
      'after a 404 not_proxied with an unread body',
      'POST /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /api/v1/tickets?pipelined HTTP/1.1\r\nHost: x\r\n\r\n',
      [404],
    ],
    [
      'after a 400 bad_path with an unread body',
      'POST /api/v1/../x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /api/v1/tickets?pipelined HTTP/1.1\r\nHost: x\r\n\r\n',
      [400],
    ],
    [
      'after a request with Connection: close',
      'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /api/v1/tickets?pipelined HTTP/1.1\r\nHost: x\r\n\r\n',
      [200],
    ],
  ] as const)('forwards nothing pipelined %s', async ([_name, raw, expected], { shared: { gateway, proxy } }) => {
    const before = gateway.apiRequests.length;
    const res = await rawUntilClose(proxy.proxyPort, raw);
    expect(statuses(res)).toEqual(expected);
    const sent = gateway.apiRequests.slice(before);
    expect(sent.filter((r) => r.url.includes('pipelined'))).toEqual([]);
    expect(sent.length).toBe(expected.filter((s) => s === 200).length);
  });

  it('still answers every request of an ordinary pipeline', async ({ shared: { proxy } }) => {
    const one = 'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\n\r\n';
    const res = await rawUntilClose(proxy.proxyPort, `${one}${one}GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(statuses(res)).toEqual([200, 200, 200]);
  });
});

describe('a connection whose request without a body was refused', () => {
  it.for([
    ['a 404 not_proxied to a GET', 'GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n', 404],
    ['a 400 bad_path to a GET', 'GET /api/v1/%2e%2e/x HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['a 405 to a TRACE', 'TRACE /api/v1/tickets HTTP/1.1\r\nHost: x\r\n\r\n', 405],
    ['a 404 to a POST with an empty body', 'POST /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n', 404],
  ] as const)(
    'stays open after %s, and forwards the next request on it',
    async ([_name, refused, status], { shared: { gateway, proxy } }) => {
      const before = gateway.apiRequests.length;
      const res = await rawUntilClose(
        proxy.proxyPort,
        `${refused}GET /api/v1/tickets?kept HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      expect(statuses(res)).toEqual([status, 200]);
      expect(res.slice(0, res.indexOf('\r\n\r\n'))).toMatch(/\r\nConnection: keep-alive\r\n/i);
      expect(gateway.apiRequests.slice(before).map((r) => r.url)).toEqual(['/api/v1/tickets?kept']);
    },
  );
});
