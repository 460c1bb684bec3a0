import { describe, expect } from 'vitest';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { BACKOFF_CAP_MS } from '../../src/token/refresh-schedule.js';
import { closedPort, pollUntil, runCli, type ProxyHandle } from '../helpers/index.js';
import { test as it } from '../helpers/stack.js';

/**
 * ISSUER_URL through the real proxy process and `check`, against the mock as an issuer: its
 * metadata documents (RFC 8414's and OpenID Connect's), a wrong `issuer`, none there, a token
 * endpoint that moves, and an issuer that cannot be reached at start.
 */
const ISSUER_PATH = '/realms/tickets';
const OAUTH_DOC = `/.well-known/oauth-authorization-server${ISSUER_PATH}`;
const OPENID_DOC = `${ISSUER_PATH}/.well-known/openid-configuration`;
const mockOptions = { clients: { app: 's3cret-issuer' }, tokenTtlS: 600, issuerPath: ISSUER_PATH };
/** A failed fetch is tried again at most the backoff's cap later, however many failed before. */
const UNTIL_NEXT_TRY_MS = BACKOFF_CAP_MS + 5_000;
const issuerEnv = (g: MockTicketService) => ({ ISSUER_URL: g.issuer.url });
const check = (g: MockTicketService, env: Record<string, string> = {}) =>
  runCli(['check'], { BASE_URL: g.url, CLIENT_ID: 'app', CLIENT_SECRET: 's3cret-issuer', ...issuerEnv(g), ...env });

async function readyz(p: ProxyHandle): Promise<{ status: number; reason: string | undefined }> {
  const res = await fetch(`${p.adminUrl}/readyz`);
  return { status: res.status, reason: ((await res.json()) as { reason?: string }).reason };
}

const fetchesCounted = async (p: ProxyHandle, outcome: string): Promise<number> => {
  const text = await (await fetch(`${p.adminUrl}/metrics`)).text();
  const m = new RegExp(`^ticket_auth_proxy_token_fetches_total\\{route="default",outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
};

describe('the token endpoint read from ISSUER_URL', () => {
  it('needs only ISSUER_URL, CLIENT_ID and the secret: the proxy reads RFC 8414 metadata, fetches there and forwards', async ({
    stack,
  }) => {
    const { gateway: g, proxy: p } = await stack({ mock: mockOptions, clientId: 'app', secret: 's3cret-issuer', env: issuerEnv });
    expect(g.issuer.requests).toEqual([OAUTH_DOC]);
    expect(g.tokenRequests).toHaveLength(1);
    const res = await fetch(`${p.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(200);
    expect(g.apiRequests.at(-1)?.tokenValid).toBe(true);
    const found = p.lines().find((l) => l.msg === 'token endpoint read from the issuer metadata');
    expect(found).toMatchObject({
      issuer: g.issuer.url,
      metadata: `${new URL(g.url).origin}${OAUTH_DOC}`,
      tokenUrl: `${g.url}/api/v1/oauth2/token`,
    });
    expect(p.lines().find((l) => l.msg === 'listeners up')).toMatchObject({ issuer: g.issuer.url });
  });

  it("falls back to OpenID Connect's document when RFC 8414's is not served", async ({ stack, mock }) => {
    const g = await mock(mockOptions);
    g.issuer.serve('openid');
    await stack({ gateway: g, clientId: 'app', secret: 's3cret-issuer', env: issuerEnv });
    expect(g.issuer.requests).toEqual([OAUTH_DOC, OPENID_DOC]);
    expect(g.tokenRequests).toHaveLength(1);
  });

  it('refuses an issuer that differs by its trailing slash, showing both values, retrying with the backoff until it matches', async ({
    stack,
    mock,
  }) => {
    const g = await mock(mockOptions);
    g.issuer.nameIssuer(`${g.issuer.url}/`);
    const c = await check(g);
    expect(c.code).toBe(1);
    expect(c.stderr).toContain('check failed: invalid_response: ');
    expect(c.stderr).toContain(`"${g.issuer.url}/", not ISSUER_URL "${g.issuer.url}": they differ by the trailing slash only`);
    expect(c.stderr).toContain(`set ISSUER_URL=${g.issuer.url}/, exactly as the identity provider writes its issuer`);

    const { proxy: p } = await stack({ gateway: g, clientId: 'app', secret: 's3cret-issuer', env: issuerEnv, ready: false });
    await p.waitForLog((l) => l.msg === 'token fetch failed', 10_000);
    const state = await readyz(p);
    expect(state.status).toBe(503);
    expect(state.reason).toContain('they differ by the trailing slash only');
    expect(await fetchesCounted(p, 'invalid_response')).toBeGreaterThanOrEqual(1);
    const refused = await fetch(`${p.proxyUrl}/api/v1/tickets`);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { code: string }).code).toBe('token_unavailable');
    expect(g.tokenRequests).toHaveLength(0);

    // The issuer put right, the next try (the token backoff's, at most its cap away) reads it and fetches.
    g.issuer.nameIssuer(g.issuer.url);
    await pollUntil(async () => (await readyz(p)).status === 200, { timeoutMs: UNTIL_NEXT_TRY_MS });
    expect(g.tokenRequests).toHaveLength(1);
  }, 60_000);

  it('tells an ISSUER_URL that serves no metadata, naming both documents', async ({ mock }) => {
    const g = await mock(mockOptions);
    g.issuer.serve('none');
    const c = await check(g);
    expect(c.code).toBe(1);
    const origin = new URL(g.url).origin;
    expect(c.stderr).toContain(
      `check failed: invalid_response: ISSUER_URL ${g.issuer.url} serves no metadata: ${origin}${OAUTH_DOC} answered 404, ` +
        `${origin}${OPENID_DOC} answered 404; set ISSUER_URL to the issuer the identity provider names`,
    );
  });

  it('reads the metadata again when the token endpoint answers 404, and follows it where it moved', async ({ stack }) => {
    const { gateway: g, proxy: p } = await stack({ mock: mockOptions, clientId: 'app', secret: 's3cret-issuer', env: issuerEnv });
    const before = g.tokenRequests.length;
    g.issuer.moveTokenEndpoint('/oauth2/v2/token');
    // A gateway that rejects the token makes the proxy fetch another: at the old path, a 404.
    g.revokeAll();
    await pollUntil(async () => (await fetch(`${p.proxyUrl}/api/v1/tickets`)).status === 200, { timeoutMs: 15_000 });
    expect(g.issuer.requests).toEqual([OAUTH_DOC, OAUTH_DOC]);
    expect(g.tokenRequests).toHaveLength(before + 1);
    expect(await fetchesCounted(p, 'invalid_response')).toBe(1);
    expect(p.lines().find((l) => l.msg === 'the issuer metadata names a new token endpoint')).toMatchObject({
      previous: `${g.url}/api/v1/oauth2/token`,
      tokenUrl: `${new URL(g.url).origin}/oauth2/v2/token`,
    });
  });

  it('is not ready while the issuer cannot be reached, answers 503, and becomes ready once it can', async ({ stack, mock }) => {
    // Below the ephemeral range, the port stays unused while the issuer is down: no other server
    // is given it, and no connection to it connects to itself.
    const g = await mock({ ...mockOptions, port: await closedPort() });
    await g.setDown(true);
    const c = await check(g);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(/check failed: network_error: ISSUER_URL's metadata \S+ unreachable \(ECONNREFUSED\)/);
    expect(c.stderr).toContain('check the host name and port of ISSUER_URL');

    const { proxy: p } = await stack({ gateway: g, clientId: 'app', secret: 's3cret-issuer', env: issuerEnv, ready: false });
    const failed = await p.waitForLog((l) => l.msg === 'token fetch failed', 10_000);
    expect(failed).toMatchObject({
      outcome: 'network_error',
      hint: 'check the host name and port of ISSUER_URL, and HTTPS_PROXY/NO_PROXY',
    });
    expect(String(failed.reason)).toContain("ISSUER_URL's metadata");
    const state = await readyz(p);
    expect(state.status).toBe(503);
    expect(state.reason).toContain("no valid token (last fetch: network_error: ISSUER_URL's metadata");
    const res = await fetch(`${p.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);

    await g.setDown(false);
    await pollUntil(async () => (await readyz(p)).status === 200, { timeoutMs: UNTIL_NEXT_TRY_MS });
    expect(await fetchesCounted(p, 'network_error')).toBeGreaterThanOrEqual(1);
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
  }, 60_000);
});

describe('pass-through credentials with ISSUER_URL', () => {
  it("read the issuer's metadata at start though no token is fetched then, and send callers' credentials where it says", async ({
    stack,
  }) => {
    const { gateway: g, proxy: p } = await stack({
      mock: mockOptions,
      credentials: false,
      env: (m) => ({ ...issuerEnv(m), PASSTHROUGH_BASIC: 'true' }),
      mustNotLeak: ['s3cret-issuer', Buffer.from('app:s3cret-issuer').toString('base64')],
    });
    await p.waitForLog((l) => l.msg === 'token endpoint read from the issuer metadata', 10_000);
    expect(g.issuer.requests).toEqual([OAUTH_DOC]);
    expect(g.tokenRequests).toHaveLength(0);
    const basic = `Basic ${Buffer.from('app:s3cret-issuer').toString('base64')}`;
    const res = await fetch(`${p.proxyUrl}/api/v1/tickets`, { headers: { authorization: basic } });
    expect(res.status).toBe(200);
    expect(g.tokenRequests.map((r) => r.clientId)).toEqual(['app']);
    expect(g.issuer.requests).toHaveLength(1);
  });
});

describe('check and the start-up log with ISSUER_URL', () => {
  it('prints the token endpoint it found, and where', async ({ mock }) => {
    const g = await mock(mockOptions);
    const c = await check(g);
    expect(c.stderr).toBe('');
    expect(c.code).toBe(0);
    const origin = new URL(g.url).origin;
    expect(c.stdout).toContain(`token endpoint: ${g.url}/api/v1/oauth2/token (from ${origin}${OAUTH_DOC})\n`);
    expect(c.stdout).toContain(`ok: token obtained from ${g.url}/api/v1/oauth2/token`);
  });

  it("warns, in check and at start, when the metadata lists neither TOKEN_AUTH_METHOD nor the proofs' algorithm", async ({
    mock,
    stack,
  }) => {
    const g = await mock(mockOptions);
    g.issuer.list({ authMethods: ['client_secret_basic', 'private_key_jwt'], dpopAlgs: ['PS256'] });
    const method =
      "ISSUER_URL's metadata lists token_endpoint_auth_methods_supported client_secret_basic, private_key_jwt, without TOKEN_AUTH_METHOD=client_secret_post";
    const alg = "ISSUER_URL's metadata lists dpop_signing_alg_values_supported PS256, without ES256, the DPoP proofs' algorithm";
    const c = await check(g, { DPOP: 'on' });
    expect(c.stderr).toContain(`ticket-auth-proxy: warning: ${method}`);
    expect(c.stderr).toContain(`ticket-auth-proxy: warning: ${alg}`);
    // The mock takes the method all the same: a warning, not a failure.
    expect(c.code).toBe(0);

    const { proxy: p } = await stack({ gateway: g, clientId: 'app', secret: 's3cret-issuer', env: { ...issuerEnv(g), DPOP: 'on' } });
    const warnings = p
      .lines()
      .filter((l) => l.level === 40 && l.issuer === g.issuer.url)
      .map((l) => String(l.msg));
    expect(warnings).toEqual([expect.stringContaining(method), expect.stringContaining(alg)]);
  });

  it('says nothing when the metadata lists the method, basic here', async ({ mock }) => {
    const g = await mock(mockOptions);
    g.issuer.list({ authMethods: ['client_secret_basic'] });
    const c = await check(g, { TOKEN_AUTH_METHOD: 'client_secret_basic' });
    expect(c.stderr).toBe('');
    expect(c.code).toBe(0);
  });

  it('refuses ISSUER_URL beside TOKEN_URL before anything is read', async ({ mock }) => {
    const g = await mock(mockOptions);
    const c = await check(g, { TOKEN_URL: `${g.url}/api/v1/oauth2/token` });
    expect(c.code).toBe(2);
    expect(c.stderr).toContain('ISSUER_URL and TOKEN_URL are both set');
    expect(g.issuer.requests).toEqual([]);
  });
});
