import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createMockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, startProxy } from '../helpers/index.js';

describe('a 401 that is not replayed (PRODUCT §5.7)', () => {
  it('still drops the rejected token and fetches a new one when the body was too large to replay', async () => {
    const secret = `s-${randomBytes(8).toString('hex')}`;
    const gateway = await createMockTicketService({ clients: { client: secret }, tokenTtlS: 600 });
    const proxy = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: secret, REPLAY_BODY_LIMIT_BYTES: '1024' });
    try {
      await pollUntil(async () => (await fetch(`${proxy.adminUrl}/readyz`)).status === 200, { timeoutMs: 10_000 });
      gateway.revokeAll();
      const res = await fetch(`${proxy.proxyUrl}/api/v1/upload`, { method: 'POST', body: randomBytes(5000) });
      expect(res.status).toBe(401);
      await pollUntil(() => gateway.tokenRequests.length === 2, { timeoutMs: 5000 });
      // The next request goes out with the new token the first time.
      expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
      const calls = gateway.apiRequests.filter((r) => r.url.endsWith('/tickets'));
      expect(calls.map((r) => r.tokenValid)).toEqual([true]);
    } finally {
      await proxy.stop();
      await gateway.close();
    }
  });
});
