import { describe, expect } from 'vitest';
import type { MockTicketService, TokenFault, TokenRefusalStyle } from '../../src/mock/ticket-service.js';
import { runCli, type LogLine } from '../helpers/index.js';
import { test as it, type StartMock, type StartStack } from '../helpers/stack.js';

/** The current test's fixtures and its mock, for the helpers below. */
let current: { mock: StartMock; stack: StartStack; gateway?: MockTicketService };
it.beforeEach(({ mock, stack }) => {
  current = { mock, stack };
});

async function gateway(tokenRefusal?: TokenRefusalStyle, secret = 's3cret'): Promise<MockTicketService> {
  current.gateway = await current.mock({
    clients: { app: secret },
    tokenTtlS: 600,
    ...(tokenRefusal === undefined ? {} : { tokenRefusal }),
  });
  return current.gateway;
}

const isFailure = (l: LogLine) => l.msg === 'token fetch failed' || l.msg === 'token endpoint rejected the client credentials';

/** What a user sees of one mistake: `check`'s output, the running proxy's log line, its /readyz reason and metrics. */
async function observe(
  env: Record<string, string>,
): Promise<{ check: string; line: LogLine; readyz: string; up: LogLine; metrics: string }> {
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
  const metrics = await (await fetch(`${p.adminUrl}/metrics`)).text();
  expect(check.stderr + check.stdout + p.output() + reason + metrics).not.toContain(full.CLIENT_SECRET);
  return { check: check.stderr, line, readyz: reason, up, metrics };
}

describe('token endpoint failures name the endpoint and the likely mistake', () => {
  it('refuses a BASE_URL ending in /api/v1 at start, naming the base URL to use', async () => {
    const g = await gateway();
    const result = await runCli(['check'], { BASE_URL: `${g.url}/api/v1`, CLIENT_ID: 'app', CLIENT_SECRET: 's3cret' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `BASE_URL ends in /api/v1 (got "${g.url}/api/v1"): the proxy adds /api/v1 itself, so set it to the gateway's base URL, ${g.url}`,
    );
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

  it('says a token endpoint reached over https that speaks plain HTTP does not speak TLS, and how to write http://', async () => {
    const g = await gateway();
    const https = g.url.replace(/^http:/, 'https:');
    const seen = await observe({ BASE_URL: https });
    const host = new URL(g.url).host;
    for (const text of [seen.check, seen.readyz, `${String(seen.line.reason)}; ${String(seen.line.hint)}`]) {
      expect(text).toContain(`token endpoint ${host} does not speak TLS (ERR_SSL_WRONG_VERSION_NUMBER)`);
      expect(text).toContain('it was reached, but answered the TLS handshake with something else, as a plain-HTTP server does');
      expect(text).toContain(
        'write http:// in TOKEN_URL/BASE_URL (allowed for a loopback host, for another host with ALLOW_INSECURE_HTTP=true)',
      );
      expect(text).not.toMatch(/unreachable|check the host name/);
    }
    expect(seen.line).toMatchObject({ outcome: 'network_error', tokenUrl: `${https}/api/v1/oauth2/token` });
    // The same fix works: http:// to this loopback host.
    const fixed = await runCli(['check'], { BASE_URL: g.url, CLIENT_ID: 'app', CLIENT_SECRET: 's3cret' });
    expect(fixed.code).toBe(0);
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

/** The count of token fetches with `outcome` in a /metrics text (0 when the series is absent). */
function fetches(metrics: string, outcome: string): number {
  const m = new RegExp(`^ticket_auth_proxy_token_fetches_total\\{route="default",outcome="${outcome}"\\} (\\S+)$`, 'm').exec(metrics);
  return m ? Number(m[1]) : 0;
}

const CREDENTIALS_FIRST =
  'the token endpoint refused the client without an error code: check the client credentials first: CLIENT_ID and the secret (CLIENT_SECRET_FILE or CLIENT_SECRET)';
const NO_SCOPE = 'TOKEN_SCOPE is not set, and some identity providers refuse a request without a scope the same way';

describe('refusals as identity providers answer them: a bare 400, 401 or 403', () => {
  it.each([403, 401, 400] as const)(
    'counts a wrong secret answered with a bare %i as rejected and names the credentials first',
    async (status) => {
      const g = await gateway({ status, bare: true });
      g.setClientSecret('app', 'another');
      const seen = await observe({ BASE_URL: g.url });
      const tokenUrl = `${g.url}/api/v1/oauth2/token`;
      expect(seen.check).toContain(
        `check failed: rejected: token endpoint answered ${status} (token URL ${tokenUrl}); ${CREDENTIALS_FIRST}`,
      );
      for (const text of [seen.check, seen.readyz, String(seen.line.hint)]) {
        expect(text).toContain(CREDENTIALS_FIRST);
        expect(text).toContain(NO_SCOPE);
        expect(text).not.toContain('does not look like a token endpoint');
        expect(text).not.toContain('client_secret_post');
      }
      expect(seen.readyz).toContain(`last fetch: rejected: token endpoint answered ${status}`);
      expect(seen.line).toMatchObject({
        msg: 'token endpoint rejected the client credentials',
        outcome: 'rejected',
        status,
        level: 50,
        tokenUrl,
      });
      expect(fetches(seen.metrics, 'rejected')).toBeGreaterThanOrEqual(1);
      expect(fetches(seen.metrics, 'server_error')).toBe(0);
    },
  );

  it('mentions no TOKEN_SCOPE when one is set, and a provider that wants one is satisfied by setting it', async () => {
    const g = await gateway({ status: 403, bare: true, scopeRequired: true });
    const seen = await observe({ BASE_URL: g.url });
    expect(seen.check).toContain(NO_SCOPE);
    expect(String(seen.line.hint)).toContain(NO_SCOPE);
    expect(seen.readyz).toContain(NO_SCOPE);
    const ok = await runCli(['check'], { BASE_URL: g.url, CLIENT_ID: 'app', CLIENT_SECRET: 's3cret', TOKEN_SCOPE: 'tickets.read' });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    g.setClientSecret('app', 'another');
    const scoped = await observe({ BASE_URL: g.url, TOKEN_SCOPE: 'tickets.read' });
    expect(scoped.check).toContain(CREDENTIALS_FIRST);
    expect(scoped.check).not.toContain('TOKEN_SCOPE');
  });

  it('suggests client_secret_post when a provider compares Basic credentials undecoded, never showing the secret', async () => {
    const secret = 'p+ss/w:rd=&%~!';
    const g = await gateway({ status: 403, bare: true, basicAsSent: true }, secret);
    const seen = await observe({
      BASE_URL: g.url,
      CLIENT_SECRET: secret,
      TOKEN_AUTH_METHOD: 'client_secret_basic',
      TOKEN_SCOPE: 'tickets',
    });
    const suggestion = 'which some identity providers compare without decoding: try TOKEN_AUTH_METHOD=client_secret_post';
    for (const text of [seen.check, seen.readyz, String(seen.line.hint)]) {
      expect(text).toContain(CREDENTIALS_FIRST);
      expect(text).toContain(suggestion);
      expect(text).not.toContain('p+ss');
    }
    expect(fetches(seen.metrics, 'rejected')).toBeGreaterThanOrEqual(1);
    const post = await runCli(['check'], {
      BASE_URL: g.url,
      CLIENT_ID: 'app',
      CLIENT_SECRET: secret,
      TOKEN_AUTH_METHOD: 'client_secret_post',
    });
    expect(post.code).toBe(0);
    expect(post.stdout + post.stderr).not.toContain('p+ss');
  });

  it('shows an error code outside RFC 6749 as given, with its reading', async () => {
    const g = await gateway();
    g.setTokenFault({ status: 400, body: { error: 'scope_invalid' }, times: 1_000 });
    const seen = await observe({ BASE_URL: g.url, TOKEN_SCOPE: 'tickets:everything' });
    for (const text of [seen.check, seen.readyz]) {
      expect(text).toContain('token endpoint answered 400 scope_invalid');
      expect(text).toContain('scope_invalid (read as invalid_scope): check TOKEN_SCOPE');
    }
    expect(seen.line).toMatchObject({
      outcome: 'rejected',
      error: 'scope_invalid',
      hint: 'scope_invalid (read as invalid_scope): check TOKEN_SCOPE: the IdP does not grant this scope to this client',
    });
    expect(fetches(seen.metrics, 'rejected')).toBeGreaterThanOrEqual(1);
  });
});
