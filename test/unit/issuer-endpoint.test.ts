import { describe, expect, it } from 'vitest';
import { ClientAssertionError, IssuerMetadataError, TokenFetchError } from '../../src/token/errors.js';
import { issuerTokenEndpoint, REREAD_INTERVAL_MS } from '../../src/token/discovery/issuer-endpoint.js';
import type { IssuerMetadata } from '../../src/token/discovery/issuer-metadata.js';
import { fixedTokenEndpoint, sentTo } from '../../src/token/discovery/token-endpoint.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const ISSUER = 'https://idp.example/realms/t';
const metadata = (tokenEndpoint: string): IssuerMetadata => ({
  issuer: ISSUER,
  documentUrl: `${ISSUER}/.well-known/openid-configuration`,
  tokenEndpoint,
  authMethods: undefined,
  dpopAlgs: undefined,
});
const unreachable = () => new IssuerMetadataError('network_error', "ISSUER_URL's metadata unreachable", 'check it');
const networkError = () => new TokenFetchError('network_error', 'token endpoint unreachable');
const notFound = () => new TokenFetchError('invalid_response', 'token endpoint answered 404', { status: 404 });

/** An endpoint whose reads answer from `answers`, in order (the last one repeats). */
function setup(...answers: (string | Error)[]) {
  const clock = new FakeClock();
  const log = new FakeLog();
  const reads: number[] = [];
  const seen: IssuerMetadata[] = [];
  const endpoint = issuerTokenEndpoint({
    issuer: ISSUER,
    clock,
    log,
    read: async () => {
      const answer = answers[Math.min(reads.length, answers.length - 1)]!;
      reads.push(clock.now());
      if (answer instanceof Error) throw answer;
      return metadata(answer);
    },
    onRead: (m) => seen.push(m),
  });
  return { clock, log, reads, seen, endpoint };
}

describe('the token endpoint an issuer names', () => {
  it('is unknown until the metadata is read, then read once and kept', async () => {
    const t = setup('https://idp.example/token');
    expect(t.endpoint.url).toBeUndefined();
    expect(t.endpoint.issuer).toBe(ISSUER);
    expect(await t.endpoint.resolve()).toBe('https://idp.example/token');
    expect(await t.endpoint.resolve()).toBe('https://idp.example/token');
    expect(t.endpoint.url).toBe('https://idp.example/token');
    expect(t.endpoint.metadata?.documentUrl).toBe(`${ISSUER}/.well-known/openid-configuration`);
    expect(t.reads).toHaveLength(1);
    expect(t.seen).toHaveLength(1);
    expect(t.log.at('info')[0]).toMatchObject({
      msg: 'token endpoint read from the issuer metadata',
      obj: { issuer: ISSUER, tokenUrl: 'https://idp.example/token' },
    });
  });

  it('reads the metadata once for callers that ask at the same time', async () => {
    const t = setup('https://idp.example/token');
    const urls = await Promise.all([t.endpoint.resolve(), t.endpoint.resolve(), t.endpoint.resolve()]);
    expect(urls).toEqual(Array(3).fill('https://idp.example/token'));
    expect(t.reads).toHaveLength(1);
  });

  it('rejects while the metadata cannot be read, and reads it at every try until it can', async () => {
    const t = setup(unreachable(), unreachable(), 'https://idp.example/token');
    await expect(t.endpoint.resolve()).rejects.toBeInstanceOf(IssuerMetadataError);
    await expect(t.endpoint.resolve()).rejects.toThrow("ISSUER_URL's metadata unreachable");
    expect(await t.endpoint.resolve()).toBe('https://idp.example/token');
    expect(t.reads).toHaveLength(3);
  });

  it.each([
    ['a network error', networkError],
    ['a 404', notFound],
  ])('reads the metadata again after %s at the token endpoint, and follows it where it moved', async (_what, error) => {
    const t = setup('https://idp.example/token', 'https://idp.example/v2/token');
    await t.endpoint.resolve();
    t.endpoint.failed('https://idp.example/token', error());
    expect(await t.endpoint.resolve()).toBe('https://idp.example/v2/token');
    expect(t.reads).toHaveLength(2);
    expect(t.seen.map((m) => m.tokenEndpoint)).toEqual(['https://idp.example/token', 'https://idp.example/v2/token']);
    expect(t.log.at('warn')[0]).toMatchObject({
      msg: 'the issuer metadata names a new token endpoint',
      obj: { previous: 'https://idp.example/token', tokenUrl: 'https://idp.example/v2/token' },
    });
  });

  it('does not read it again after other failures, an assertion that was not sent, or a failure at a URL it no longer names', async () => {
    const t = setup('https://idp.example/token');
    await t.endpoint.resolve();
    for (const outcome of ['rejected', 'server_error', 'timeout', 'rate_limited', 'invalid_response'] as const) {
      t.endpoint.failed('https://idp.example/token', new TokenFetchError(outcome, 'x', { status: outcome === 'rejected' ? 401 : 500 }));
    }
    t.endpoint.failed('https://idp.example/old-token', networkError());
    t.endpoint.failed('https://idp.example/token', new ClientAssertionError('network_error', 'client assertion file expired'));
    await t.endpoint.resolve();
    expect(t.reads).toHaveLength(1);
  });

  it('reads it again at most once a minute, however often the token endpoint fails', async () => {
    const t = setup('https://idp.example/token');
    await t.endpoint.resolve();
    t.endpoint.failed('https://idp.example/token', networkError());
    await t.endpoint.resolve();
    expect(t.reads).toHaveLength(2);
    for (let i = 0; i < 10; i++) {
      await t.clock.advance(5_000);
      t.endpoint.failed('https://idp.example/token', networkError());
      await t.endpoint.resolve();
    }
    expect(t.reads).toHaveLength(2);
    await t.clock.advance(REREAD_INTERVAL_MS - 50_000);
    await t.endpoint.resolve();
    expect(t.reads).toHaveLength(3);
    expect(t.reads[2]! - t.reads[1]!).toBe(REREAD_INTERVAL_MS);
  });

  it('keeps the endpoint it knew when the metadata cannot be read again, and says so', async () => {
    const t = setup('https://idp.example/token', unreachable());
    await t.endpoint.resolve();
    t.endpoint.failed('https://idp.example/token', networkError());
    expect(await t.endpoint.resolve()).toBe('https://idp.example/token');
    expect(t.log.at('warn')[0]).toMatchObject({
      msg: 'the issuer metadata could not be read again; the token endpoint it named stays in use',
      obj: { tokenUrl: 'https://idp.example/token', reason: "ISSUER_URL's metadata unreachable" },
    });
  });
});

describe('a request sent where the endpoint says', () => {
  it('goes to the URL resolved for it, and tells the endpoint how it failed', async () => {
    const t = setup('https://idp.example/token', 'https://idp.example/v2/token');
    const sent: string[] = [];
    const request = sentTo(t.endpoint, async (_credential: string, url: string) => {
      sent.push(url);
      if (url === 'https://idp.example/token') throw notFound();
      return 'grant';
    });
    await expect(request('c')).rejects.toThrow('answered 404');
    await expect(request('c')).resolves.toBe('grant');
    expect(sent).toEqual(['https://idp.example/token', 'https://idp.example/v2/token']);
  });

  it('is not sent when the metadata cannot be read, and fails as a token fetch', async () => {
    const t = setup(unreachable());
    let sent = 0;
    const request = sentTo(t.endpoint, async () => void sent++);
    await expect(request('c')).rejects.toBeInstanceOf(TokenFetchError);
    expect(sent).toBe(0);
  });

  it('goes to a fixed token URL without reading anything', async () => {
    const endpoint = fixedTokenEndpoint('https://gw.example/api/v1/oauth2/token');
    expect(endpoint.url).toBe('https://gw.example/api/v1/oauth2/token');
    expect(endpoint.issuer).toBeUndefined();
    const request = sentTo(endpoint, async (_c: string, url: string) => url);
    await expect(request('c')).resolves.toBe('https://gw.example/api/v1/oauth2/token');
  });
});
