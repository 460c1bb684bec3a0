import { connect } from 'node:net';
import { describe, expect } from 'vitest';
import { pollUntil } from '../helpers/index.js';
import { sharedStack } from '../helpers/stack.js';

const SECRET = 'proc-secret-77aa';
// One mock for the file; each test starts its own proxy against it and stops it by signal.
const it = sharedStack({ secret: SECRET, mock: { tokenTtlS: 900 } });

describe('shutdown', () => {
  it('turns unready at once, keeps serving through the delay, lets an in-flight request finish and exits 0', async ({
    shared: { gateway },
    stack,
  }) => {
    // A port outside the ephemeral range, so no other process of the suite can take it over once closed.
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const { proxy } = await stack({ gateway, secret: SECRET, env: { SHUTDOWN_DELAY_S: '1', LISTEN_PORT: String(port) } });
    const inflight = fetch(`${proxy.proxyUrl}/api/v1/slow?ms=1500`).then(async (r) => ({ status: r.status, text: await r.text() }));
    await pollUntil(() => gateway.apiRequests.some((r) => r.url.includes('/slow')), { timeoutMs: 5000 });
    proxy.child.kill('SIGTERM');
    await proxy.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('shutdown started'), 5000);
    const readyz = await fetch(`${proxy.adminUrl}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toMatchObject({ reason: 'shutting down' });
    expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    await proxy.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('listeners closed'), 5000);
    const refused = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.on('connect', () => (s.destroy(), resolve(false)));
      s.on('error', () => resolve(true));
    });
    expect(refused).toBe(true);
    expect(await inflight).toMatchObject({ status: 200 });
    expect(await proxy.waitForExit(10_000)).toMatchObject({ code: 0 });
  });

  it('exits 1 when the drain times out', async ({ shared: { gateway }, stack }) => {
    const { proxy } = await stack({ gateway, secret: SECRET, env: { SHUTDOWN_TIMEOUT_S: '0.5' } });
    const hanging = fetch(`${proxy.proxyUrl}/api/v1/hang`).catch((e: Error) => e);
    await pollUntil(() => gateway.apiRequests.some((r) => r.url.endsWith('/hang') && !r.aborted), { timeoutMs: 5000 });
    proxy.child.kill('SIGTERM');
    expect(await proxy.waitForExit(10_000)).toMatchObject({ code: 1 });
    expect(await hanging).toBeInstanceOf(Error);
  });

  it('exits at once with status 1 on a second signal', async ({ shared: { gateway }, stack }) => {
    const { proxy } = await stack({ gateway, secret: SECRET, env: { SHUTDOWN_DELAY_S: '30' }, ready: false });
    proxy.child.kill('SIGTERM');
    await proxy.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('shutdown started'), 5000);
    proxy.child.kill('SIGINT');
    expect(await proxy.waitForExit(5000)).toMatchObject({ code: 1 });
  });
});
