import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import { pollUntil } from '../helpers/index.js';
import { test as it } from '../helpers/stack.js';

describe('a 401 that is not replayed', () => {
  it('still drops the rejected token and fetches a new one when the body was too large to replay', async ({ stack }) => {
    const { gateway, proxy } = await stack({ env: { REPLAY_BODY_LIMIT_BYTES: '1024' } });
    gateway.revokeAll();
    const res = await fetch(`${proxy.proxyUrl}/api/v1/upload`, { method: 'POST', body: randomBytes(5000) });
    expect(res.status).toBe(401);
    await pollUntil(() => gateway.tokenRequests.length === 2, { timeoutMs: 5000 });
    // The next request goes out with the new token the first time.
    expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    const calls = gateway.apiRequests.filter((r) => r.url.endsWith('/tickets'));
    expect(calls.map((r) => r.tokenValid)).toEqual([true]);
  });
});
