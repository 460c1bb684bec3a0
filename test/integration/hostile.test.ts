import { describe, expect } from 'vitest';
import { rawRequest } from '../helpers/index.js';
import { sharedStack } from '../helpers/stack.js';

const SECRET = 'hostile-secret-5e5e';
const it = sharedStack({ secret: SECRET, mock: { tokenTtlS: 60 }, env: { LOG_LEVEL: 'trace', ACCESS_LOG: 'true' } });

const SHAPES: [string, string][] = [
  [
    'Content-Length with Transfer-Encoding',
    'POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /api/v1/oauth2/token HTTP/1.1\r\nHost: x\r\n\r\n',
  ],
  ['two differing Content-Lengths', 'POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabc'],
  ['an obfuscated Transfer-Encoding', 'POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n'],
  ['a bad chunk size', 'POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n'],
  ['obsolete header line folding', 'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n'],
  ['a space before the header colon', 'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\nhello'],
  ['a bare LF line ending', 'GET /api/v1/tickets HTTP/1.1\nHost: x\n\n'],
  ['garbage', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03'],
  ['a NUL in the target', 'GET /api/v1/tick\x00ets HTTP/1.1\r\nHost: x\r\n\r\n'],
];

describe('hostile raw requests', () => {
  it.for(SHAPES)('refuses %s with a 4xx and forwards nothing unintended', async ([_name, raw], { shared: { gateway, proxy } }) => {
    const before = gateway.apiRequests.length;
    const tokensBefore = gateway.tokenRequests.length;
    const res = await rawRequest(proxy.proxyPort, raw, { timeoutMs: 5000 });
    if (res !== '') expect(res).toMatch(/^HTTP\/1\.1 4\d\d/);
    expect(gateway.apiRequests.length).toBe(before);
    expect(gateway.tokenRequests.length).toBe(tokensBefore);
  });

  it('refuses absurdly large headers with 431 and keeps serving', async ({ shared: { proxy } }) => {
    const res = await rawRequest(proxy.proxyPort, `GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, {
      timeoutMs: 5000,
    });
    expect(res).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('answers a malformed request with problem+json', async ({ shared: { proxy } }) => {
    const res = await rawRequest(proxy.proxyPort, 'POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', {
      timeoutMs: 5000,
    });
    expect(res).toMatch(/^HTTP\/1\.1 400/);
    expect(res).toContain('application/problem+json');
  });

  it('still serves normal requests after every hostile one', async ({ shared: { gateway, proxy } }) => {
    const res = await fetch(`${proxy.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(200);
    expect(proxy.child.exitCode).toBeNull();
    expect(proxy.output()).not.toContain(SECRET);
    for (const token of gateway.issuedTokens()) expect(proxy.output()).not.toContain(token);
  });
});
