import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Provider, { errors } from 'oidc-provider';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, runCli, startProxy } from '../helpers/index.js';

/** A real authorization server on loopback: client_credentials and RFC 8707 resource indicators. */
const RESOURCE = 'https://tickets.example';
/** A client_secret_jwt client's secret: 32 octets and more, with characters Basic would encode. */
const JWT_SECRET = 'idp-jwt-s3cret+/=~!-0123456789abcdef';
/** What the provider reported of each token request: its client authentication, as it verified it. */
const grants: {
  event: string;
  clientId: string | undefined;
  method: string | undefined;
  assertionType: unknown;
  secretSent: boolean;
  error?: string;
}[] = [];
let server: Server;
let gateway: MockTicketService;
let tokenUrl = '';

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'app',
        client_secret: 'idp-s3cret',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: 'tickets:read',
      },
      {
        client_id: 'jwt-app',
        client_secret: JWT_SECRET,
        token_endpoint_auth_method: 'client_secret_jwt',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: 'tickets:read',
      },
    ],
    // oidc-provider drops unknown scopes silently; it refuses a known scope the client is not granted.
    scopes: ['tickets:read', 'tickets:admin'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        getResourceServerInfo: (_ctx, resource) => {
          if (resource !== RESOURCE) throw new errors.InvalidTarget();
          return { scope: 'tickets:read', audience: RESOURCE, accessTokenFormat: 'jwt', accessTokenTTL: 600 };
        },
      },
    },
  });
  type Ctx = {
    headers: Record<string, string | undefined>;
    oidc?: { client?: { clientId: string; clientAuthMethod: string }; params?: Record<string, unknown> };
  };
  const record = (event: string, ctx: Ctx, error?: Error) =>
    grants.push({
      event,
      clientId: ctx.oidc?.client?.clientId,
      method: ctx.oidc?.client?.clientAuthMethod,
      assertionType: ctx.oidc?.params?.client_assertion_type,
      secretSent: ctx.oidc?.params?.client_secret !== undefined || /^basic /i.test(ctx.headers.authorization ?? ''),
      ...(error === undefined ? {} : { error: error.message }),
    });
  provider.on('grant.success', (ctx: Ctx) => record('grant.success', ctx));
  provider.on('grant.error', (ctx: Ctx, error: Error) => record('grant.error', ctx, error));
  server.on('request', provider.callback());
  tokenUrl = `${issuer}/token`;
  gateway = await createMockTicketService({ clients: {}, tokenTtlS: 600 });
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await gateway.close();
});

const check = (env: Record<string, string>) =>
  runCli(['check'], { BASE_URL: gateway.url, TOKEN_URL: tokenUrl, CLIENT_ID: 'app', CLIENT_SECRET: 'idp-s3cret', ...env });

describe('against a real identity provider (oidc-provider)', () => {
  it('obtains a token', async () => {
    const r = await check({ TOKEN_SCOPE: 'tickets:read' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`ok: token obtained from ${tokenUrl}`);
  });

  it('tells a scope the client is not granted as invalid_scope, pointing at TOKEN_SCOPE', async () => {
    const r = await check({ TOKEN_SCOPE: 'tickets:admin' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('invalid_scope');
    expect(r.stderr).toContain('check TOKEN_SCOPE');
    expect(r.stderr).toContain(tokenUrl);
  });

  it('tells an unknown resource as invalid_target, pointing at TOKEN_PARAMS', async () => {
    const r = await check({ TOKEN_PARAMS: 'resource=https%3A%2F%2Funknown.example' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('invalid_target');
    expect(r.stderr).toContain('check TOKEN_PARAMS');
  });

  it('tells a wrong secret as invalid_client, pointing at the credentials, never printing the secret', async () => {
    const r = await check({ CLIENT_SECRET: 'wrong-s3cret' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('invalid_client');
    expect(r.stderr).toContain('CLIENT_ID');
    expect(r.stdout + r.stderr).not.toContain('s3cret');
  });
});

describe('client_secret_jwt against a real identity provider (oidc-provider)', () => {
  const env = { TOKEN_AUTH_METHOD: 'client_secret_jwt', CLIENT_ID: 'jwt-app', CLIENT_SECRET: JWT_SECRET, TOKEN_SCOPE: 'tickets:read' };

  it('obtains a token with an assertion the provider verified, the secret never sent', async () => {
    grants.splice(0);
    const r = await check(env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`ok: token obtained from ${tokenUrl}`);
    expect(grants).toEqual([
      {
        event: 'grant.success',
        clientId: 'jwt-app',
        method: 'client_secret_jwt',
        assertionType: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        secretSent: false,
      },
    ]);
    expect(r.stdout + r.stderr).not.toContain(JWT_SECRET);
  });

  it('is refused with a wrong secret (the signature is checked), told as the secret the assertion is signed with', async () => {
    grants.splice(0);
    const r = await check({ ...env, CLIENT_SECRET: 'wrong-secret-of-thirty-two-octets!!' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('check failed: rejected: token endpoint answered 401 invalid_client');
    expect(r.stderr).toContain('CLIENT_ID and the secret the assertion is signed with');
    expect(grants).toEqual([expect.objectContaining({ event: 'grant.error', secretSent: false })]);
    expect(r.stdout + r.stderr).not.toContain('wrong-secret');
  });

  it('grants a second run too: each assertion has its own jti, which the provider accepts once', async () => {
    grants.splice(0);
    for (const _ of [1, 2]) expect((await check(env)).code).toBe(0);
    expect(grants.map((g) => g.event)).toEqual(['grant.success', 'grant.success']);
  });

  it('keeps the running proxy ready with the token, counted a success', async () => {
    grants.splice(0);
    const p = await startProxy({ BASE_URL: gateway.url, TOKEN_URL: tokenUrl, ...env });
    try {
      await pollUntil(async () => (await fetch(`${p.adminUrl}/readyz`)).status === 200, { timeoutMs: 10_000 });
      const metrics = await (await fetch(`${p.adminUrl}/metrics`)).text();
      expect(metrics).toMatch(/^ticket_auth_proxy_token_fetches_total\{route="default",outcome="success"\} 1$/m);
      expect(grants).toEqual([expect.objectContaining({ event: 'grant.success', method: 'client_secret_jwt', secretSent: false })]);
    } finally {
      await p.stop();
    }
    expect(p.output()).not.toContain(JWT_SECRET);
  });
});
