/**
 * `/readyz` through an identity-provider outage that outlasts the token, with `READINESS=token`
 * (the default) and `READINESS=started` (a sidecar's): two real proxies against one mock whose
 * token endpoint starts failing after the first token.
 */
import { describe, expect } from 'vitest';
import { pollUntil } from '../helpers/index.js';
import { test as it, type Stack } from '../helpers/stack.js';

const SECRET = 'readiness-secret-8e21';

async function readyz(stack: Stack): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${stack.proxy.adminUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('readiness through an identity-provider outage', () => {
  it('stays 200 with READINESS=started and turns 503 with READINESS=token once the token expires; both turn 503 at shutdown', async ({
    mock,
    stack,
  }) => {
    const gateway = await mock({ clients: { client: SECRET }, tokenTtlS: 2 });
    const env = { TOKEN_WAIT_TIMEOUT_MS: '100', SHUTDOWN_DELAY_S: '2' };
    const started = await stack({ gateway, secret: SECRET, env: { ...env, READINESS: 'started' } });
    const token = await stack({ gateway, secret: SECRET, env });
    for (const s of [started, token])
      expect(await readyz(s)).toEqual({ status: 200, body: { status: 'ready', routes: { default: { ready: true } } } });

    // Every token request from now on fails, so both tokens run out.
    gateway.setTokenFault({ status: 503, body: { error: 'temporarily_unavailable' }, times: 100_000 });
    for (const s of [started, token]) {
      await pollUntil(
        async () => {
          const res = await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`);
          return res.status === 503 && ((await res.json()) as { code: string }).code === 'token_unavailable';
        },
        { timeoutMs: 10_000 },
      );
    }

    const reason = expect.stringMatching(/^no valid token \(last fetch: server_error: token endpoint answered 503/);
    expect(await readyz(started)).toEqual({ status: 200, body: { status: 'ready', reason, routes: { default: { ready: true, reason } } } });
    expect(await readyz(token)).toEqual({
      status: 503,
      body: { status: 'not_ready', reason, routes: { default: { ready: false, reason } } },
    });
    // The metrics tell the token's state whatever /readyz says: the alerts fire on them.
    // (TicketAuthProxyNoValidToken: the expiry has passed; the token went out of use shortly before it.)
    for (const s of [started, token]) {
      expect(await s.metric(/ticket_auth_proxy_token_consecutive_failures\{route="default"\} (\d+)/)).toBeGreaterThan(0);
      await pollUntil(
        async () => (await s.metric(/ticket_auth_proxy_token_expiry_timestamp_seconds\{route="default"\} (\S+)/)) < Date.now() / 1000,
        {
          timeoutMs: 5000,
        },
      );
      expect((await readyz(s)).status).toBe(s === started ? 200 : 503);
    }

    for (const s of [started, token]) {
      s.proxy.child.kill('SIGTERM');
      await s.proxy.waitForLog((l) => l.msg?.startsWith('shutdown started') === true, 5000);
      expect(await readyz(s)).toEqual({
        status: 503,
        body: { status: 'not_ready', reason: 'shutting down', routes: { default: { ready: false, reason: 'shutting down' } } },
      });
    }
  }, 30_000);

  it('is 503 with READINESS=started until the first token is held', async ({ mock, stack }) => {
    const gateway = await mock({ clients: { client: SECRET } });
    gateway.setTokenFault({ status: 503, body: { error: 'temporarily_unavailable' }, times: 3 });
    const s = await stack({ gateway, secret: SECRET, env: { READINESS: 'started' }, ready: false });
    expect(await readyz(s)).toMatchObject({ status: 503, body: { status: 'not_ready' } });
    await s.untilReady(15_000);
    expect(await readyz(s)).toEqual({ status: 200, body: { status: 'ready', routes: { default: { ready: true } } } });
  }, 30_000);
});
