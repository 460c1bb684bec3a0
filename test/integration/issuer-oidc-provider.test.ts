import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Provider from 'oidc-provider';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, runCli, startProxy } from '../helpers/index.js';

/**
 * ISSUER_URL against a real authorization server: oidc-provider mounted under a realm's path, as
 * Keycloak's issuers are (`http://host/realms/tickets`), so the proxy finds no RFC 8414 document
 * at the path RFC 8414 §3.1 builds and reads OpenID Connect Discovery's, with the provider's own
 * lists of client authentication methods (`client_secret_jwt` left out here) and DPoP algorithms.
 */
const REALM = '/realms/tickets';
const SECRET = 'idp-issuer-s3cret-0123456789abcdef+/=';
/** What the provider reported of each token request. */
const grants: { event: string; method: string | undefined; error?: string }[] = [];
const dir = mkdtempSync(join(tmpdir(), 'tap-issuer-oidc-'));
let server: Server;
let gateway: MockTicketService;
let issuer = '';

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}${REALM}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'app',
        client_secret: SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: 'tickets:read',
      },
    ],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    scopes: ['tickets:read'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      dPoP: { enabled: true },
    },
  });
  type Ctx = { oidc?: { client?: { clientAuthMethod: string } } };
  provider.on('grant.success', (ctx: Ctx) => grants.push({ event: 'grant.success', method: ctx.oidc?.client?.clientAuthMethod }));
  provider.on('grant.error', (ctx: Ctx, error: Error) =>
    grants.push({ event: 'grant.error', method: ctx.oidc?.client?.clientAuthMethod, error: error.message }),
  );
  // Mounted under the realm's path: the provider sees its routes without it (oidc-provider reads
  // the mount path from the original URL), and nothing else is served.
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.url === REALM || req.url?.startsWith(`${REALM}/`)) {
      (req as { originalUrl?: string }).originalUrl = req.url;
      req.url = req.url.slice(REALM.length) || '/';
      callback(req, res);
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
    }
  });
  gateway = await createMockTicketService({ clients: {}, tokenTtlS: 600 });
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await gateway.close();
});

const env = (extra: Record<string, string> = {}) => ({
  BASE_URL: gateway.url,
  ISSUER_URL: issuer,
  CLIENT_ID: 'app',
  CLIENT_SECRET: SECRET,
  ...extra,
});

describe('ISSUER_URL against a real identity provider (oidc-provider)', () => {
  it('needs only ISSUER_URL, CLIENT_ID and the secret: check finds the token endpoint in OpenID Connect metadata and gets a token', async () => {
    grants.splice(0);
    const r = await runCli(['check'], env());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`token endpoint: ${issuer}/token (from ${issuer}/.well-known/openid-configuration)\n`);
    expect(r.stdout).toContain(`ok: token obtained from ${issuer}/token`);
    expect(grants).toEqual([expect.objectContaining({ event: 'grant.success' })]);
  });

  it('runs the proxy ready with the token from the endpoint the metadata names', async () => {
    grants.splice(0);
    const p = await startProxy(env());
    try {
      await pollUntil(async () => (await fetch(`${p.adminUrl}/readyz`)).status === 200, { timeoutMs: 10_000 });
      const metrics = await (await fetch(`${p.adminUrl}/metrics`)).text();
      expect(metrics).toMatch(/^ticket_auth_proxy_token_fetches_total\{route="default",outcome="success"\} 1$/m);
      expect(p.lines().find((l) => l.msg === 'token endpoint read from the issuer metadata')).toMatchObject({
        metadata: `${issuer}/.well-known/openid-configuration`,
        tokenUrl: `${issuer}/token`,
      });
      expect(p.lines().filter((l) => l.level === 40)).toEqual([]);
    } finally {
      await p.stop();
    }
    expect(p.output()).not.toContain(SECRET);
  });

  it('names a method the provider does not list before its refusal', async () => {
    grants.splice(0);
    const r = await runCli(['check'], env({ TOKEN_AUTH_METHOD: 'client_secret_jwt' }));
    expect(r.code).toBe(1);
    const warning = r.stderr.indexOf(
      "ticket-auth-proxy: warning: ISSUER_URL's metadata lists token_endpoint_auth_methods_supported client_secret_basic, " +
        'client_secret_post, private_key_jwt, without TOKEN_AUTH_METHOD=client_secret_jwt',
    );
    const refusal = r.stderr.indexOf('ticket-auth-proxy: check failed: rejected: token endpoint answered 401 invalid_client');
    expect(warning).toBeGreaterThanOrEqual(0);
    expect(refusal).toBeGreaterThan(warning);
    expect(grants).toEqual([expect.objectContaining({ event: 'grant.error' })]);
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  it("names a DPoP proof algorithm the provider does not list (an RSA key's PS256 where it lists ES256, Ed25519, EdDSA)", async () => {
    const keyFile = join(dir, 'dpop-rsa.pem');
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    const r = await runCli(['check'], env({ DPOP: 'on', DPOP_KEY_FILE: keyFile }));
    expect(r.stderr).toContain(
      "ticket-auth-proxy: warning: ISSUER_URL's metadata lists dpop_signing_alg_values_supported ES256, Ed25519, EdDSA, without " +
        "PS256, the DPoP proofs' algorithm",
    );
    const plain = await runCli(['check'], env({ DPOP: 'on' }));
    expect(plain.stderr).toBe('');
    expect(plain.code).toBe(0);
  });
});
