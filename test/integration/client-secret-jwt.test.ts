import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, runCli, type ProxyHandle } from '../helpers/index.js';
import { metric, test as it, type StartMock, type StartStack } from '../helpers/stack.js';

/** Secrets with characters Basic would form-encode: neither may ever reach an output. */
const SECRET = 'jwt-s3cret+/=~!';
const ROTATED = 'rotated-s3cret:&%';
/** Neither secret, nor an HS256 assertion (its header), may reach the proxy's output. */
const LEAKS = [SECRET, ROTATED, 'eyJhbGciOiJIUzI1NiJ9', 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9'];

let current: { mock: StartMock; stack: StartStack };
it.beforeEach(({ mock, stack }) => {
  current = { mock, stack };
});

function gateway(): Promise<MockTicketService> {
  return current.mock({ clients: { app: SECRET }, tokenTtlS: 600 });
}

/** The secret in a file, as a Kubernetes Secret mounts it. */
function secretFile(secret: string): string {
  const d = mkdtempSync(join(tmpdir(), 'tap-jwt-'));
  writeFileSync(join(d, 'secret'), `${secret}\n`);
  return join(d, 'secret');
}

/** The proxy with client_secret_jwt and these settings, its credentials given by the test. */
async function proxy(g: MockTicketService, env: Record<string, string>, ready: boolean | number = true): Promise<ProxyHandle> {
  const settings = { CLIENT_ID: 'app', TOKEN_AUTH_METHOD: 'client_secret_jwt', LOG_LEVEL: 'trace', ...env };
  const wait = typeof ready === 'number' ? { readyTimeoutMs: ready } : { ready };
  return (await current.stack({ gateway: g, credentials: false, env: settings, mustNotLeak: LEAKS, ...wait })).proxy;
}

async function fetches(p: ProxyHandle, outcome: string): Promise<number> {
  return metric(p, new RegExp(`^ticket_auth_proxy_token_fetches_total\\{route="default",outcome="${outcome}"\\} (\\S+)$`, 'm'));
}

describe('client_secret_jwt against the mock', () => {
  it('obtains a token with an assertion signed with the secret, which the mock verified, and serves tickets; the secret is never sent', async () => {
    const g = await gateway();
    const p = await proxy(g, { CLIENT_SECRET_FILE: secretFile(SECRET) });
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(g.tokenRequests[0]).toMatchObject({ clientId: 'app', authMethod: 'client_secret_jwt', secretSent: false });
    expect(g.tokenRequests[0]!.form.map(([k]) => k)).toEqual(['grant_type', 'client_id', 'client_assertion_type']);
    expect(g.tokenRequests[0]!.headers.authorization).toBeUndefined();
    expect(await fetches(p, 'success')).toBe(1);
  });

  it('signs a new assertion for every request, retries included', async () => {
    const g = await gateway();
    g.setTokenFault({ status: 503, times: 2 });
    const p = await proxy(g, { CLIENT_SECRET: SECRET }, 15_000);
    expect(g.tokenRequests).toHaveLength(3);
    expect(new Set(g.tokenRequests.map((r) => r.assertionSha256)).size).toBe(3);
    expect(await fetches(p, 'server_error')).toBe(2);
  });

  it('fetches a token at once with a rotated secret, which the mock verifies', async () => {
    const g = await gateway();
    const file = secretFile(SECRET);
    const p = await proxy(g, { CLIENT_SECRET_FILE: file });
    g.setClientSecret('app', ROTATED);
    writeFileSync(`${file}.tmp`, ROTATED);
    renameSync(`${file}.tmp`, file);
    await pollUntil(() => g.issuedTokens().length === 2, { timeoutMs: 5_000 });
    expect(g.tokenRequests.map((r) => r.authMethod)).toEqual(['client_secret_jwt', 'client_secret_jwt']);
    expect(await fetches(p, 'success')).toBe(2);
  });

  it('counts a wrong secret as rejected and names the secret the assertion is signed with, in check, the log line and /readyz', async () => {
    const g = await gateway();
    g.setClientSecret('app', ROTATED);
    const env = { BASE_URL: g.url, CLIENT_ID: 'app', CLIENT_SECRET: SECRET, TOKEN_AUTH_METHOD: 'client_secret_jwt' };
    const check = await runCli(['check'], env);
    expect(check.code).toBe(1);
    const named =
      'check the client credentials: CLIENT_ID and the secret the assertion is signed with (CLIENT_SECRET_FILE or CLIENT_SECRET)';
    expect(check.stderr).toContain('check failed: rejected: token endpoint answered 401 invalid_client');
    expect(check.stderr).toContain(named);
    expect(check.stdout).toContain('client_secret_jwt');
    expect(check.stdout + check.stderr).not.toContain(SECRET);
    const p = await proxy(g, { CLIENT_SECRET: SECRET }, false);
    const line = await p.waitForLog((l) => l.msg === 'token endpoint rejected the client credentials', 10_000);
    expect(line).toMatchObject({ outcome: 'rejected', status: 401, error: 'invalid_client', level: 50 });
    expect(String(line.hint)).toContain(named);
    const res = await fetch(`${p.adminUrl}/readyz`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { reason: string }).reason).toContain(named);
    expect(await fetches(p, 'rejected')).toBeGreaterThanOrEqual(1);
  });

  it('sends pass-through credentials the same way', async () => {
    const g = await gateway();
    const p = await proxy(g, { PASSTHROUGH_BASIC: 'true', CLIENT_ID: '' });
    const basic = `Basic ${Buffer.from(`app:${SECRET}`).toString('base64')}`;
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`, { headers: { authorization: basic } })).status).toBe(200);
    expect(g.tokenRequests[0]).toMatchObject({ clientId: 'app', authMethod: 'client_secret_jwt', secretSent: false });
  });

  it('refuses to start without CLIENT_ID or a secret, naming the settings', async () => {
    const result = await runCli(['check'], { BASE_URL: 'http://127.0.0.1:1', TOKEN_AUTH_METHOD: 'client_secret_jwt' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('CLIENT_ID is required');
    expect(result.stderr).toContain('CLIENT_SECRET_FILE (or CLIENT_SECRET) is required');
    const reserved = await runCli(['check'], {
      BASE_URL: 'http://127.0.0.1:1',
      CLIENT_ID: 'app',
      CLIENT_SECRET: SECRET,
      TOKEN_AUTH_METHOD: 'client_secret_jwt',
      TOKEN_PARAMS: 'client_assertion=x',
    });
    expect(reserved.code).toBe(2);
    expect(reserved.stderr).toContain('TOKEN_PARAMS may not set client_assertion');
    expect(reserved.stdout + reserved.stderr).not.toContain(SECRET);
  });
});
