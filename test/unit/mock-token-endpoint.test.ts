import { generateKeyPairSync } from 'node:crypto';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { privateKeyJwt } from '../../src/token/client-auth.js';
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
    clientAuth: privateKeyJwt({ key: () => privateKey, alg: 'ES256', kid: undefined, now: Date.now }),
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
