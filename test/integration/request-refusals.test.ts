import { describe, expect } from 'vitest';
import { rawRequest } from '../helpers/index.js';
import { sharedStack } from '../helpers/stack.js';

const it = sharedStack({ mock: { tokenTtlS: 60 } });

describe('a raw # in the target', () => {
  it.for([['/api/v1/oauth2#/token'], ['/api/v1/..#x'], ['/api/v1/tickets#frag'], ['/api/v1/tickets?q=a#b']])(
    'refuses %s with 400 bad_path and forwards nothing',
    async ([target], { shared: { gateway, proxy } }) => {
      const before = gateway.apiRequests.length;
      const res = await rawRequest(proxy.proxyPort, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(res).toMatch(/^HTTP\/1\.1 400 /);
      expect(res).toContain('"code":"bad_path"');
      expect(gateway.apiRequests.length).toBe(before);
    },
  );
});

describe('refusals of the HTTP parser', () => {
  it('answers a request head over MAX_HEADER_BYTES with 431 headers_too_large problem+json', async ({ shared: { gateway, proxy } }) => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(proxy.proxyPort, `GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`);
    expect(res).toMatch(/^HTTP\/1\.1 431 /);
    expect(res).toContain('application/problem+json');
    expect(res).toContain('"code":"headers_too_large"');
    expect(gateway.apiRequests.length).toBe(before);
  });

  it("counts the whole head against MAX_HEADER_BYTES: many short headers under the parser's own count are refused 431 too", async ({
    stack,
  }) => {
    const s = await stack({ env: { MAX_HEADER_BYTES: '1024' } });
    const { proxy, gateway } = s;
    const head = (headers: number): string =>
      `GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\n${Array.from({ length: headers }, (_, i) => `X-${i}: v\r\n`).join('')}Connection: close\r\n\r\n`;
    // 150 header lines of about 10 bytes: 1.4 KB on the wire, under 1024 by names and values alone.
    const over = head(150);
    expect(Buffer.byteLength(over)).toBeGreaterThan(1400);
    const before = gateway.apiRequests.length;
    const refused = await rawRequest(proxy.proxyPort, over);
    expect(refused).toMatch(/^HTTP\/1\.1 431 /);
    expect(refused).toContain('"code":"headers_too_large"');
    expect(gateway.apiRequests.length).toBe(before);
    // A head under the limit, counted the same way, is forwarded.
    const under = head(40);
    expect(Buffer.byteLength(under)).toBeLessThan(1024);
    expect(await rawRequest(proxy.proxyPort, under)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await s.metric(/ticket_auth_proxy_requests_total\{route="default",method="GET",code="431"\} (\d+)/)).toBe(1);
  });

  it('answers raw non-ASCII bytes in a query with 400 bad_request and forwards the percent-encoded form', async ({ shared: { proxy } }) => {
    const refused = await rawRequest(proxy.proxyPort, Buffer.from('GET /api/v1/echo?q=\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1'));
    expect(refused).toMatch(/^HTTP\/1\.1 400 /);
    expect(refused).toContain('"code":"bad_request"');
    const res = await fetch(`${proxy.proxyUrl}/api/v1/echo?q=%C3%A9`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { url: string }).url).toBe('/api/v1/echo?q=%C3%A9');
  });
});

describe('an expectation other than 100-continue', () => {
  it('is ignored as nginx ignores it: the request is forwarded without its Expect, and the gateway answers', async ({
    shared: { gateway, proxy },
  }) => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(
      proxy.proxyPort,
      'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n',
    );
    expect(res).toMatch(/^HTTP\/1\.1 200 /);
    expect(gateway.apiRequests.length).toBe(before + 1);
    expect(gateway.apiRequests.at(-1)!.headers.expect).toBeUndefined();
  });
});
