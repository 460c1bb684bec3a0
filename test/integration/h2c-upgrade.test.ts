import { describe, expect } from 'vitest';
import { run } from '../helpers/clients.js';
import { rawRequest } from '../helpers/index.js';
import { sharedStack } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const it = sharedStack({ mock: { tokenTtlS: 60 } });

describe('an h2c upgrade offer (curl --http2, Java HttpClient)', () => {
  it.skipIf(lacks('curl'))(
    `is answered over HTTP/1.1 and its headers do not travel on${skipNote('curl')}`,
    async ({ shared: { gateway, proxy } }) => {
      const before = gateway.apiRequests.length;
      const out = await run('curl', ['-si', '--http2', `${proxy.proxyUrl}/api/v1/tickets`]);
      expect(out).toMatch(/^HTTP\/1\.1 200 /);
      expect(out).toContain('TCK-1001');
      const sent = gateway.apiRequests.slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.headers.upgrade).toBeUndefined();
      expect(sent[0]!.headers['http2-settings']).toBeUndefined();
    },
  );

  it('drops HTTP2-Settings even when Connection does not name it', async ({ shared: { gateway, proxy } }) => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(
      proxy.proxyPort,
      'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n',
    );
    expect(res).toMatch(/^HTTP\/1\.1 200 /);
    const sent = gateway.apiRequests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers['http2-settings']).toBeUndefined();
  });

  it('still answers a WebSocket upgrade with 501 and forwards nothing', async ({ shared: { gateway, proxy } }) => {
    const before = gateway.apiRequests.length;
    const res = await rawRequest(
      proxy.proxyPort,
      'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    expect(res).toMatch(/^HTTP\/1\.1 501 /);
    expect(res).toContain('"code":"upgrade_not_supported"');
    expect(gateway.apiRequests.length).toBe(before);
  });
});
