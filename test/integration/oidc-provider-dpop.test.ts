import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Provider from 'oidc-provider';
import { runCli } from '../helpers/index.js';

/**
 * DPoP (RFC 9449) against a real identity provider: oidc-provider with `features.dPoP`, issuing
 * JWT access tokens bound to the proof key (`cnf.jkt`), one instance without and one with a
 * nonce demanded, and every client authentication method it supports.
 */
const RESOURCE = 'https://tickets.example';
const SECRET = 'idp-dpop-s3cret-0123456789abcdef-+/=';
/** What the provider issued, by the token's claims: each token's `cnf.jkt`, and the nonce errors it answered. */
const issued: { issuer: string; clientId: string; method: string; jkt: string | undefined }[] = [];
const errors: { issuer: string; error: string }[] = [];
const servers: Server[] = [];
const assertionKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
let assertionJwk: JWK;
const dir = mkdtempSync(join(tmpdir(), 'tap-oidc-dpop-'));

type Ctx = { oidc?: { client?: { clientId: string; clientAuthMethod: string } }; body?: { access_token?: string; token_type?: string } };

async function provider(requireNonce: boolean): Promise<string> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = (id: string, method: string, extra: Record<string, unknown> = {}) => ({
    client_id: id,
    token_endpoint_auth_method: method,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: 'tickets:read',
    ...extra,
  });
  const p = new Provider(issuer, {
    clients: [
      client('post', 'client_secret_post', { client_secret: SECRET }),
      client('basic', 'client_secret_basic', { client_secret: SECRET }),
      client('jwt', 'client_secret_jwt', { client_secret: SECRET }),
      client('pkjwt', 'private_key_jwt', { jwks: { keys: [assertionJwk] } }),
    ],
    scopes: ['tickets:read'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      dPoP: { enabled: true, ...(requireNonce ? { nonceSecret: randomBytes(32), requireNonce: () => true } : {}) },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        getResourceServerInfo: () => ({ scope: 'tickets:read', audience: RESOURCE, accessTokenFormat: 'jwt', accessTokenTTL: 600 }),
      },
    },
  });
  p.on('grant.success', (ctx: Ctx) => {
    const token = ctx.body?.access_token ?? '';
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString() || '{}') as { cnf?: { jkt?: string } };
    issued.push({
      issuer,
      clientId: ctx.oidc?.client?.clientId ?? '',
      method: ctx.oidc?.client?.clientAuthMethod ?? '',
      jkt: claims.cnf?.jkt,
    });
  });
  p.on('grant.error', (_ctx: Ctx, error: Error & { error?: string }) => errors.push({ issuer, error: error.error ?? error.message }));
  server.on('request', p.callback());
  return `${issuer}/token`;
}

let plain = '';
let withNonce = '';
beforeAll(async () => {
  assertionJwk = { ...(await exportJWK(assertionKey.publicKey as KeyObject)), alg: 'ES256', use: 'sig' };
  writeFileSync(join(dir, 'assertion.pem'), assertionKey.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  plain = await provider(false);
  withNonce = await provider(true);
});

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

const METHODS: Record<string, Record<string, string>> = {
  post: { TOKEN_AUTH_METHOD: 'client_secret_post', CLIENT_SECRET: SECRET },
  basic: { TOKEN_AUTH_METHOD: 'client_secret_basic', CLIENT_SECRET: SECRET },
  jwt: { TOKEN_AUTH_METHOD: 'client_secret_jwt', CLIENT_SECRET: SECRET },
  pkjwt: { TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: join(dir, 'assertion.pem') },
};

describe('DPoP against a real identity provider (oidc-provider)', () => {
  for (const [label, tokenUrl] of [
    ['without a nonce', () => plain],
    ['with a nonce demanded', () => withNonce],
  ] as const) {
    for (const [clientId, env] of Object.entries(METHODS)) {
      it(`obtains a token bound to the proxy key ${label}, with ${env.TOKEN_AUTH_METHOD}`, async () => {
        const url = tokenUrl();
        const r = await runCli(['check'], {
          BASE_URL: 'http://127.0.0.1:9',
          TOKEN_URL: url,
          CLIENT_ID: clientId,
          TOKEN_SCOPE: 'tickets:read',
          DPOP: 'required',
          ...env,
        });
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        const thumbprint = /key thumbprint \(RFC 7638\) (\S+)/.exec(r.stdout)?.[1];
        expect(thumbprint).toMatch(/^[\w-]{43}$/);
        expect(r.stdout).toContain(`token type: DPoP (bound to the key ${thumbprint})`);
        // The provider's own token: cnf.jkt is the key the proxy printed.
        const mine = issued.filter((i) => url.startsWith(i.issuer) && i.clientId === clientId);
        expect(mine.at(-1)).toEqual({ issuer: expect.any(String), clientId, method: env.TOKEN_AUTH_METHOD, jkt: thumbprint });
        expect(r.stdout).not.toMatch(/eyJ[\w-]+\.eyJ/);
      });
    }
  }

  it('asked for a nonce, answers it at once (the nonce demand seen by the provider, then the grant)', () => {
    expect(errors.filter((e) => withNonce.startsWith(e.issuer)).map((e) => e.error)).toContain('use_dpop_nonce');
    expect(errors.filter((e) => plain.startsWith(e.issuer))).toEqual([]);
  });
});
