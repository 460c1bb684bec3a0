import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Provider, { errors } from 'oidc-provider';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { runCli } from '../helpers/index.js';

/** A real authorization server on loopback: client_credentials and RFC 8707 resource indicators. */
const RESOURCE = 'https://tickets.example';
let server: Server;
let gateway: MockTicketService;
let tokenUrl = '';

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [{ client_id: 'app', client_secret: 'idp-s3cret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [], scope: 'tickets:read' }],
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
