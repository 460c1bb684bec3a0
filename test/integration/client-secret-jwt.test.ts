import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, runCli, startProxy, type ProxyHandle } from '../helpers/index.js';

/** Secrets with characters Basic would form-encode: neither may ever reach an output. */
const SECRET = 'jwt-s3cret+/=~!';
const ROTATED = 'rotated-s3cret:&%';
const running: { proxies: ProxyHandle[]; gateways: MockTicketService[] } = { proxies: [], gateways: [] };

afterEach(async () => {
  for (const p of running.proxies.splice(0)) {
    await p.stop();
    for (const leak of [SECRET, ROTATED, 'eyJhbGciOiJIUzI1NiJ9', 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9']) expect(p.output()).not.toContain(leak);
  }
  for (const g of running.gateways.splice(0)) await g.close();
});

async function gateway(): Promise<MockTicketService> {
  const g = await createMockTicketService({ clients: { app: SECRET }, tokenTtlS: 600 });
  running.gateways.push(g);
  return g;
}

/** The secret in a file, as a Kubernetes Secret mounts it. */
function secretFile(secret: string): string {
  const d = mkdtempSync(join(tmpdir(), 'tap-jwt-'));
  writeFileSync(join(d, 'secret'), `${secret}\n`);
  return join(d, 'secret');
}

async function proxy(env: Record<string, string>): Promise<ProxyHandle> {
  const p = await startProxy({ CLIENT_ID: 'app', TOKEN_AUTH_METHOD: 'client_secret_jwt', LOG_LEVEL: 'trace', ...env });
  running.proxies.push(p);
  return p;
}

const ready = (p: ProxyHandle) => async () => (await fetch(`${p.adminUrl}/readyz`)).status === 200;

async function fetches(p: ProxyHandle, outcome: string): Promise<number> {
  const text = await (await fetch(`${p.adminUrl}/metrics`)).text();
  const m = new RegExp(`^ticket_auth_proxy_token_fetches_total\\{outcome="${outcome}"\\} (\\S+)$`, 'm').exec(text);
  expect(text).not.toContain(SECRET);
  return m ? Number(m[1]) : 0;
}

describe('client_secret_jwt against the mock', () => {
  it('obtains a token with an assertion signed with the secret, which the mock verified, and serves tickets; the secret is never sent', async () => {
    const g = await gateway();
    const p = await proxy({ BASE_URL: g.url, CLIENT_SECRET_FILE: secretFile(SECRET) });
    await pollUntil(ready(p), { timeoutMs: 10_000 });
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(g.tokenRequests[0]).toMatchObject({ clientId: 'app', authMethod: 'client_secret_jwt', secretSent: false });
    expect(g.tokenRequests[0]!.form.map(([k]) => k)).toEqual(['grant_type', 'client_id', 'client_assertion_type']);
    expect(g.tokenRequests[0]!.headers.authorization).toBeUndefined();
    expect(await fetches(p, 'success')).toBe(1);
  });

  it('signs a new assertion for every request, retries included', async () => {
    const g = await gateway();
    g.setTokenFault({ status: 503, times: 2 });
    const p = await proxy({ BASE_URL: g.url, CLIENT_SECRET: SECRET });
    await pollUntil(ready(p), { timeoutMs: 15_000 });
    expect(g.tokenRequests).toHaveLength(3);
    expect(new Set(g.tokenRequests.map((r) => r.assertionSha256)).size).toBe(3);
    expect(await fetches(p, 'server_error')).toBe(2);
  });

  it('fetches a token at once with a rotated secret, which the mock verifies', async () => {
    const g = await gateway();
    const file = secretFile(SECRET);
    const p = await proxy({ BASE_URL: g.url, CLIENT_SECRET_FILE: file });
    await pollUntil(ready(p), { timeoutMs: 10_000 });
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
    const named = 'check the client credentials: CLIENT_ID and the secret the assertion is signed with (CLIENT_SECRET_FILE or CLIENT_SECRET)';
    expect(check.stderr).toContain('check failed: rejected: token endpoint answered 401 invalid_client');
    expect(check.stderr).toContain(named);
    expect(check.stdout).toContain('client_secret_jwt');
    expect(check.stdout + check.stderr).not.toContain(SECRET);
    const p = await proxy(env);
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
    const p = await startProxy({ BASE_URL: g.url, PASSTHROUGH_BASIC: 'true', TOKEN_AUTH_METHOD: 'client_secret_jwt' });
    running.proxies.push(p);
    const basic = `Basic ${Buffer.from(`app:${SECRET}`).toString('base64')}`;
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`, { headers: { authorization: basic } })).status).toBe(200);
    expect(g.tokenRequests[0]).toMatchObject({ clientId: 'app', authMethod: 'client_secret_jwt', secretSent: false });
  });

  it('refuses to start without CLIENT_ID or a secret, naming the settings', async () => {
    const result = await runCli(['check'], { BASE_URL: 'http://127.0.0.1:1', TOKEN_AUTH_METHOD: 'client_secret_jwt' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('CLIENT_ID is required');
    expect(result.stderr).toContain('CLIENT_SECRET_FILE (or CLIENT_SECRET) is required');
    const reserved = await runCli(['check'], { BASE_URL: 'http://127.0.0.1:1', CLIENT_ID: 'app', CLIENT_SECRET: SECRET, TOKEN_AUTH_METHOD: 'client_secret_jwt', TOKEN_PARAMS: 'client_assertion=x' });
    expect(reserved.code).toBe(2);
    expect(reserved.stderr).toContain('TOKEN_PARAMS may not set client_assertion');
    expect(reserved.stdout + reserved.stderr).not.toContain(SECRET);
  });
});
