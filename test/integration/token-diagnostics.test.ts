import { describe, expect } from 'vitest';
import type { MockTicketService, TokenFault } from '../../src/mock/ticket-service.js';
import { runCli, type LogLine } from '../helpers/index.js';
import { test as it, type StartMock, type StartStack } from '../helpers/stack.js';

/** The current test's fixtures and its mock, for the helpers below. */
let current: { mock: StartMock; stack: StartStack; gateway?: MockTicketService };
it.beforeEach(({ mock, stack }) => {
  current = { mock, stack };
});

async function gateway(): Promise<MockTicketService> {
  current.gateway = await current.mock({ clients: { app: 's3cret' }, tokenTtlS: 600 });
  return current.gateway;
}

const isFailure = (l: LogLine) => l.msg === 'token fetch failed' || l.msg === 'token endpoint rejected the client credentials';

/** What a user sees of one mistake: `check`'s output, the running proxy's log line and its /readyz reason. */
async function observe(env: Record<string, string>): Promise<{ check: string; line: LogLine; readyz: string; up: LogLine }> {
  const full = { CLIENT_ID: 'app', CLIENT_SECRET: 's3cret', ...env };
  const check = await runCli(['check'], full);
  expect(check.code).toBe(1);
  // The stack's teardown checks the secret, its base64 form and the mock's tokens against the output.
  const { proxy: p } = await current.stack({ gateway: current.gateway, clientId: 'app', secret: 's3cret', env: full, ready: false });
  const line = await p.waitForLog(isFailure, 10_000);
  const up = await p.waitForLog((l) => l.msg === 'listeners up', 10_000);
  const res = await fetch(`${p.adminUrl}/readyz`);
  expect(res.status).toBe(503);
  const { reason } = (await res.json()) as { reason: string };
  expect(check.stderr + check.stdout + p.output() + reason).not.toContain('s3cret');
  return { check: check.stderr, line, readyz: reason, up };
}

describe('token endpoint failures name the endpoint and the likely mistake', () => {
  it('refuses a BASE_URL ending in /api/v1 at start, naming the base URL to use', async () => {
    const g = await gateway();
    const result = await runCli(['check'], { BASE_URL: `${g.url}/api/v1`, CLIENT_ID: 'app', CLIENT_SECRET: 's3cret' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`BASE_URL ends in /api/v1 (got "${g.url}/api/v1"): the proxy adds /api/v1 itself, so set it to the gateway's base URL, ${g.url}`);
    expect(g.tokenRequests).toHaveLength(0);
  });

  it('tells a TOKEN_URL that answers 401 without an OAuth error as not looking like a token endpoint, naming the URL called', async () => {
    const g = await gateway();
    // The API root answers 401 invalid_token (a resource server's answer, not a token endpoint's).
    const called = `${g.url}/api/v1/tickets`;
    const seen = await observe({ BASE_URL: g.url, TOKEN_URL: called });
    for (const text of [seen.check, seen.readyz]) expect(text).toContain(called);
    expect(seen.check).toContain('this does not look like a token endpoint');
    expect(seen.check).toContain('BASE_URL');
    expect(seen.readyz).toContain('this does not look like a token endpoint');
    expect(seen.line).toMatchObject({ msg: 'token fetch failed', outcome: 'rejected', tokenUrl: called });
    expect(String(seen.line.hint)).toContain('this does not look like a token endpoint');
    expect(seen.up.tokenUrl).toBe(called);
  });

  it('counts a 404 at a wrong TOKEN_URL as invalid_response and asks whether TOKEN_URL/BASE_URL is right', async () => {
    const g = await gateway();
    const wrong = `${g.url}/oauth/token`;
    const seen = await observe({ BASE_URL: g.url, TOKEN_URL: wrong });
    expect(seen.check).toContain('invalid_response');
    for (const text of [seen.check, seen.readyz]) {
      expect(text).toContain(wrong);
      expect(text).toContain('is TOKEN_URL/BASE_URL right?');
    }
    expect(seen.line).toMatchObject({ outcome: 'invalid_response', status: 404, tokenUrl: wrong, hint: 'is TOKEN_URL/BASE_URL right?' });
  });

  it('names the host of an unknown token host', async () => {
    const g = await gateway();
    const seen = await observe({ BASE_URL: g.url, TOKEN_URL: 'https://no-such-host.invalid:1/oauth2/token' });
    expect(seen.check).toContain('no-such-host.invalid:1');
    expect(seen.readyz).toContain('no-such-host.invalid:1');
    expect(seen.line).toMatchObject({ outcome: 'network_error' });
    expect(String(seen.line.reason)).toContain('no-such-host.invalid');
  });

  it.each([
    ['invalid_scope', 'TOKEN_SCOPE'],
    ['invalid_target', 'TOKEN_PARAMS'],
    ['unauthorized_client', 'allowed grants at the IdP'],
  ])('tells %s as what to look at (%s), with the description, and keeps it a warning', async (error, lookAt) => {
    const g = await gateway();
    const fault: TokenFault = { status: 400, body: { error, error_description: `the IdP says ${error}` }, times: 1_000 };
    g.setTokenFault(fault);
    const seen = await observe({ BASE_URL: g.url });
    for (const text of [seen.check, seen.readyz, `${String(seen.line.reason)} ${String(seen.line.hint)}`]) {
      expect(text).toContain(lookAt);
      expect(text).toContain(`the IdP says ${error}`);
    }
    expect(seen.line).toMatchObject({ msg: 'token fetch failed', outcome: 'rejected', error, level: 40 });
  });

  it('keeps a wrong secret an error naming the credentials', async () => {
    const g = await gateway();
    g.setClientSecret('app', 'another');
    const seen = await observe({ BASE_URL: g.url });
    expect(seen.check).toContain('CLIENT_ID');
    expect(seen.line).toMatchObject({ msg: 'token endpoint rejected the client credentials', outcome: 'rejected', level: 50 });
  });
});
