import { generateKeyPairSync } from 'node:crypto';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { clientSecretJwtAssertion } from '../../src/token/client-auth/client-secret-jwt.js';
import { privateKeyJwtAssertion } from '../../src/token/client-auth/private-key-jwt.js';
import { clientAuthWith } from '../helpers/client-auth.js';
import { createTokenFetcher } from '../../src/token/fetch-token.js';
import { createCa, localhostCert } from '../helpers/certs.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** Fetches one token from the mock with a private_key_jwt assertion whose audience is `tokenUrl`. */
async function fetchWithAssertion(mock: MockTicketService, tokenUrl: string, ca?: string) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  mock.assertionClients.setPublicKey('client', publicKey);
  const dispatcher = new Agent(ca === undefined ? {} : { connect: { ca } });
  closing.push(() => dispatcher.close());
  const fetchToken = createTokenFetcher({
    tokenUrl,
    clientAuth: clientAuthWith(privateKeyJwtAssertion({ key: () => privateKey, alg: 'ES256', kid: undefined, now: Date.now })),
    scope: undefined,
    timeoutMs: 5_000,
    defaultTtlS: 60,
    dispatcher,
    now: Date.now,
  });
  return fetchToken({ clientId: 'client', clientSecret: '' });
}

describe('the mock token endpoint and private_key_jwt', () => {
  it('takes the https: token URL as the audience when it serves TLS', async () => {
    const ca = await createCa();
    const mock = await createMockTicketService({ tls: await localhostCert(ca) });
    closing.push(() => mock.close());
    expect(mock.url.startsWith('https://')).toBe(true);
    const grant = await fetchWithAssertion(mock, `${mock.url}/api/v1/oauth2/token`, ca.cert);
    expect(grant.lifetimeMs).toBe(60_000);
    expect(mock.tokenRequests[0]).toMatchObject({ clientId: 'client', authMethod: 'client_assertion' });
  });

  it('takes the http: token URL as the audience without TLS, and refuses an assertion naming another', async () => {
    const mock = await createMockTicketService({ pathPrefix: '/gw' });
    closing.push(() => mock.close());
    const tokenUrl = `${mock.url}/api/v1/oauth2/token`;
    expect(tokenUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/gw\/api\/v1\/oauth2\/token$/);
    await expect(fetchWithAssertion(mock, tokenUrl)).resolves.toMatchObject({ lifetimeMs: 60_000 });
    // The same endpoint reached under another name: the audience no longer matches.
    const other = tokenUrl.replace('127.0.0.1', 'localhost');
    await expect(fetchWithAssertion(mock, other)).rejects.toMatchObject({ outcome: 'rejected', oauthError: 'invalid_client' });
  });
});

/** One token request to the mock with a hand-made form and headers: its status and body. */
async function post(mock: MockTicketService, form: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(`${mock.url}/api/v1/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, body: await res.text() };
}

describe('the mock token endpoint refusing as identity providers differ', () => {
  it.each([400, 401, 403] as const)('answers a wrong secret with a bare %i when told to, and a right one with a token', async (status) => {
    const mock = await createMockTicketService({ clients: { app: 's3cret' }, tokenRefusal: { status, bare: true } });
    closing.push(() => mock.close());
    expect(await post(mock, { grant_type: 'client_credentials', client_id: 'app', client_secret: 'wrong' })).toEqual({ status, body: '' });
    expect((await post(mock, { grant_type: 'client_credentials', client_id: 'app', client_secret: 's3cret' })).status).toBe(200);
    expect(mock.tokenRequests.map((r) => r.secretSent)).toEqual([true, true]);
  });

  it('refuses a request without scope the same way when a scope is required', async () => {
    const mock = await createMockTicketService({
      clients: { app: 's3cret' },
      tokenRefusal: { status: 403, bare: true, scopeRequired: true },
    });
    closing.push(() => mock.close());
    expect(await post(mock, { grant_type: 'client_credentials', client_id: 'app', client_secret: 's3cret' })).toEqual({
      status: 403,
      body: '',
    });
    expect(
      (await post(mock, { grant_type: 'client_credentials', client_id: 'app', client_secret: 's3cret', scope: 'tickets.read' })).status,
    ).toBe(200);
  });

  it('compares Basic credentials as sent when told to, so a form-encoded secret no longer matches', async () => {
    const basic = (secret: string) => `Basic ${Buffer.from(`app:${secret}`).toString('base64')}`;
    const mock = await createMockTicketService({ clients: { app: 'a+b' }, tokenRefusal: { basicAsSent: true } });
    closing.push(() => mock.close());
    expect((await post(mock, { grant_type: 'client_credentials' }, { authorization: basic('a%2Bb') })).status).toBe(401);
    expect((await post(mock, { grant_type: 'client_credentials' }, { authorization: basic('a+b') })).status).toBe(200);
  });
});

describe('the mock token endpoint and client_secret_jwt', () => {
  const tokenUrlOf = (mock: MockTicketService) => `${mock.url}/api/v1/oauth2/token`;
  const assertionForm = async (mock: MockTicketService, secret: string, now = Date.now(), jti?: string) => {
    const auth = clientSecretJwtAssertion({ now: () => now, ...(jti === undefined ? {} : { randomId: () => jti }) });
    return Object.fromEntries([
      ['grant_type', 'client_credentials'],
      ...(await auth({ clientId: 'app', clientSecret: secret }, tokenUrlOf(mock))).form,
    ]);
  };

  it('grants a token for an assertion signed with the client secret, and records no secret sent', async () => {
    const mock = await createMockTicketService({ clients: { app: 's3cret' } });
    closing.push(() => mock.close());
    expect((await post(mock, await assertionForm(mock, 's3cret'))).status).toBe(200);
    expect(mock.tokenRequests[0]).toMatchObject({ clientId: 'app', authMethod: 'client_secret_jwt', secretSent: false });
  });

  it('refuses a wrong secret, an expired assertion and a jti used twice', async () => {
    const mock = await createMockTicketService({ clients: { app: 's3cret' } });
    closing.push(() => mock.close());
    const refusal = async (form: Record<string, string>) =>
      JSON.parse((await post(mock, form)).body) as { error: string; error_description: string };
    expect(await refusal(await assertionForm(mock, 'wrong'))).toMatchObject({ error: 'invalid_client' });
    expect((await refusal(await assertionForm(mock, 's3cret', Date.now() - 120_000))).error_description).toContain('ERR_JWT_EXPIRED');
    const once = await assertionForm(mock, 's3cret', Date.now(), 'jti-1');
    expect((await post(mock, once)).status).toBe(200);
    expect((await refusal(await assertionForm(mock, 's3cret', Date.now() + 1_000, 'jti-1'))).error_description).toBe('jti already used');
  });
});
