import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import type { TokenFault } from '../../src/mock/ticket-service.js';
import { pollUntil } from '../helpers/index.js';
import { metric, test as it, untilReady, type StartStack } from '../helpers/stack.js';

/** One mock and one proxy with a configured client; returns once the listeners are up, before the first token. */
function setup(stack: StartStack, env: Record<string, string> = {}, options: { tokenTtlS?: number; fault?: TokenFault } = {}) {
  return stack({ env, mock: { tokenTtlS: options.tokenTtlS ?? 600 }, tokenFault: options.fault, ready: false });
}

describe('the token lifecycle', () => {
  it('fetches a token at start, before any request, and turns ready when it is held', async ({ stack }) => {
    const { gateway, proxy } = await setup(stack);
    await untilReady(proxy, 10_000);
    expect(gateway.tokenRequests).toHaveLength(1);
    expect(gateway.tokenRequests[0]).toMatchObject({ clientId: 'client', authMethod: 'post' });
    expect(gateway.apiRequests).toHaveLength(0);
    expect(await metric(proxy, /ticket_auth_proxy_token_expiry_timestamp_seconds\{route="default"\} (\S+)/)).toBeGreaterThan(
      Date.now() / 1000 + 500,
    );
  });

  it('makes exactly one fetch for many concurrent requests at a cold start', async ({ stack }) => {
    const { gateway, proxy } = await setup(stack, {}, { fault: { kind: 'delay', ms: 800 } });
    const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(`${proxy.proxyUrl}/api/v1/tickets`).then((r) => r.status)));
    expect(answers).toEqual(Array(50).fill(200));
    expect(gateway.tokenRequests).toHaveLength(1);
  });

  it('sends client_secret_basic credentials and the scope when configured', async ({ stack }) => {
    const { gateway, proxy } = await setup(stack, { TOKEN_AUTH_METHOD: 'client_secret_basic', TOKEN_SCOPE: 'tickets.read' });
    await untilReady(proxy, 10_000);
    expect(gateway.tokenRequests[0]).toMatchObject({ clientId: 'client', authMethod: 'basic', scope: 'tickets.read' });
  });

  it('refreshes ahead of expiry so that callers never meet an expired token', async ({ stack }) => {
    const { gateway, proxy } = await setup(stack, {}, { tokenTtlS: 3 });
    await untilReady(proxy, 10_000);
    // Requests across three token lifetimes all succeed; the mock answers 401 to any expired token.
    const statuses: number[] = [];
    await pollUntil(
      async () => {
        statuses.push((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status);
        return gateway.tokenRequests.length >= 4;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(gateway.apiRequests.every((r) => r.tokenValid)).toBe(true);
  });

  it('answers 503 token_unavailable with Retry-After when no token can be had, and counts the failures', async ({ stack }) => {
    const { gateway, proxy } = await setup(
      stack,
      { TOKEN_WAIT_TIMEOUT_MS: '300' },
      { fault: { status: 503, body: { error: 'temporarily_unavailable' }, headers: { 'retry-after': '2' }, times: Infinity } },
    );
    const res = await fetch(`${proxy.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await res.json()).toMatchObject({ code: 'token_unavailable', status: 503 });
    await pollUntil(
      async () => (await metric(proxy, /ticket_auth_proxy_token_fetches_total\{route="default",outcome="server_error"\} (\d+)/)) >= 1,
      {
        timeoutMs: 5000,
      },
    );
    expect(await metric(proxy, /ticket_auth_proxy_token_consecutive_failures\{route="default"\} (\d+)/)).toBeGreaterThanOrEqual(1);
    expect(await metric(proxy, /ticket_auth_proxy_token_expiry_timestamp_seconds\{route="default"\} (\S+)/)).toBe(0);
    const readyz = await fetch(`${proxy.adminUrl}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toMatchObject({ status: 'not_ready' });
    const line = await proxy.waitForLog((l) => l.msg === 'token fetch failed', 20_000);
    expect(line).toMatchObject({ outcome: 'server_error', status: 503, error: 'temporarily_unavailable', attempt: 1 });
    // The next attempt is due 2 s (the Retry-After) after the answer came; the log counts from the
    // moment the token source hears of it, some time on (more on a busy machine).
    expect(line.retryInMs).toBeGreaterThan(0);
    expect(line.retryInMs).toBeLessThanOrEqual(2_000);
    // And it comes no sooner: the answer left after the first request arrived.
    await pollUntil(() => gateway.tokenRequests.length >= 2, { timeoutMs: 20_000 });
    expect(gateway.tokenRequests[1]!.at - gateway.tokenRequests[0]!.at).toBeGreaterThanOrEqual(2_000);
  });

  it('recovers once the token endpoint answers again', async ({ stack }) => {
    const { gateway, proxy } = await setup(stack, {}, { fault: { status: 500, times: 2 } });
    await untilReady(proxy, 15_000);
    expect(gateway.tokenRequests).toHaveLength(3);
    expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(await metric(proxy, /ticket_auth_proxy_token_consecutive_failures\{route="default"\} (\d+)/)).toBe(0);
  });

  it('logs a rejected client at error level with the OAuth error code', async ({ stack }) => {
    const { proxy } = await setup(
      stack,
      {},
      { fault: { status: 401, body: { error: 'invalid_client', error_description: 'unknown client' }, times: Infinity } },
    );
    const line = await proxy.waitForLog((l) => l.outcome === 'rejected', 5000);
    expect(line).toMatchObject({ level: 50, error: 'invalid_client', status: 401 });
    await pollUntil(
      async () => (await metric(proxy, /ticket_auth_proxy_token_fetches_total\{route="default",outcome="rejected"\} (\d+)/)) >= 1,
      {
        timeoutMs: 5000,
      },
    );
  });

  it('replays a small POST once, byte for byte, after a 401 with a fresh token', async ({ stack }) => {
    const { gateway, proxy } = await setup(stack);
    await untilReady(proxy, 10_000);
    gateway.revokeAll();
    const body = randomBytes(20_000);
    const res = await fetch(`${proxy.proxyUrl}/api/v1/upload`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(res.status).toBe(200);
    const sha = createHash('sha256').update(body).digest('hex');
    expect(await res.json()).toMatchObject({ length: body.length, sha256: sha });
    const uploads = gateway.apiRequests.filter((r) => r.url.endsWith('/upload'));
    expect(uploads).toHaveLength(2);
    expect(uploads[0]!.tokenValid).toBe(false);
    expect(uploads[1]).toMatchObject({ tokenValid: true, bodyLength: body.length, bodySha256: sha });
    expect(gateway.tokenRequests).toHaveLength(2);
    expect(await metric(proxy, /ticket_auth_proxy_upstream_unauthorized_total\{route="default",replayed="true"\} (\d+)/)).toBe(1);
  });

  it('returns the 401 when the body was too large to replay', async ({ stack }) => {
    const { gateway, proxy } = await setup(stack, { REPLAY_BODY_LIMIT_BYTES: '1024' });
    await untilReady(proxy, 10_000);
    gateway.revokeAll();
    const res = await fetch(`${proxy.proxyUrl}/api/v1/upload`, { method: 'POST', body: randomBytes(5000) });
    expect(res.status).toBe(401);
    expect(gateway.apiRequests.filter((r) => r.url.endsWith('/upload'))).toHaveLength(1);
    expect(await metric(proxy, /ticket_auth_proxy_upstream_unauthorized_total\{route="default",replayed="false"\} (\d+)/)).toBe(1);
    // The token was still dropped and a new one fetched, so the next request succeeds.
    expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
  });

  it('forces at most one refresh per 5 s when the gateway rejects every token', async ({ stack }) => {
    const { gateway, proxy } = await setup(stack);
    await untilReady(proxy, 10_000);
    gateway.rejectAllTokens(true);
    const statuses = [];
    const started = Date.now();
    for (let i = 0; i < 20; i++) statuses.push((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status);
    const tookMs = Date.now() - started;
    expect(statuses.every((s) => s === 401)).toBe(true);
    // One fetch at start, then at most one forced refresh for each 5 s these requests took, begun
    // or not (far less than 5 s on an idle machine: one).
    expect(gateway.tokenRequests.length - 1).toBeGreaterThanOrEqual(1);
    expect(gateway.tokenRequests.length - 1).toBeLessThanOrEqual(1 + Math.floor(tookMs / 5_000));
  });

  it('picks up a rotated secret file, Kubernetes ..data swap included, and fetches with it at once', async ({ stack }) => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-secret-'));
    const { symlinkSync, mkdirSync } = await import('node:fs');
    const oldSecret = `old-${randomBytes(6).toString('hex')}`;
    const newSecret = `new-${randomBytes(6).toString('hex')}`;
    mkdirSync(join(dir, '..2026_a'));
    writeFileSync(join(dir, '..2026_a', 'client-secret'), `${oldSecret}\n`);
    symlinkSync('..2026_a', join(dir, '..data'));
    symlinkSync('..data/client-secret', join(dir, 'client-secret'));
    const { gateway, proxy } = await stack({
      mock: { clients: { client: oldSecret } },
      credentials: false,
      env: { CLIENT_ID: 'client', CLIENT_SECRET_FILE: join(dir, 'client-secret') },
      mustNotLeak: [oldSecret, newSecret],
    });
    expect(gateway.tokenRequests).toHaveLength(1);

    gateway.setClientSecret('client', newSecret);
    mkdirSync(join(dir, '..2026_b'));
    writeFileSync(join(dir, '..2026_b', 'client-secret'), `${newSecret}\n`);
    symlinkSync('..2026_b', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));

    await proxy.waitForLog((l) => l.msg === 'secret file changed', 5000);
    await pollUntil(() => gateway.tokenRequests.length === 2, { timeoutMs: 5000 });
    await proxy.waitForLog((l) => l.msg === 'token fetched' && proxy.lines().filter((x) => x.msg === 'token fetched').length === 2, 5000);
    expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
  });
});
