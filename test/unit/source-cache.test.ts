import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidClientError, TokenUnavailableError } from '../../src/core/errors.js';
import { TokenFetchError, type FetchOutcome } from '../../src/token/errors.js';
import { parseBasicCredentials } from '../../src/token/basic-credentials.js';
import { createSourceCache, credentialKeyer, REJECTION_MEMORY_MS, type SourceCacheOptions } from '../../src/token/source-cache.js';
import { NEW_CREDENTIALS_IN_FLIGHT, NEW_CREDENTIALS_PER_SECOND, RESERVED_FOR_RETRIES } from '../../src/token/new-credential-admission.js';
import type { HeldToken } from '../../src/token/held-token.js';
import { backoffPolicy, DEFAULT_SCHEDULE } from '../../src/token/refresh-schedule.js';
import { fetchingSupply } from '../../src/token/token-supply.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { FakeFetcher, FakeLog } from '../helpers/fakes.js';

const LIFETIME = 100_000;
const ALPHA = { clientId: 'alpha-id', clientSecret: 'alpha-secret-!@#' };
const BETA = { clientId: 'beta-id', clientSecret: 'beta-secret-$%^' };

function setup(options: Partial<SourceCacheOptions> = {}) {
  const clock = new FakeClock();
  const fetcher = new FakeFetcher(clock);
  fetcher.answer = (call) => ({ accessToken: `tok-${call.credential.clientId}-${fetcher.calls.length}`, lifetimeMs: LIFETIME });
  const log = new FakeLog();
  const fetches: FetchOutcome[] = [];
  const sizes: number[] = [];
  const count = (outcome: FetchOutcome): void => void fetches.push(outcome);
  const cache = createSourceCache({
    max: 10,
    // Each credential's own fetch, as the wiring gives it without a store.
    supplyFor: (_credential, backoff) => fetchingSupply(fetcher.fetchToken, { clock, count, backoff, schedule: DEFAULT_SCHEDULE }),
    backoff: backoffPolicy(DEFAULT_SCHEDULE, () => 0),
    clock,
    random: () => 0,
    refreshRatio: 0.8,
    waitTimeoutMs: 5_000,
    defaultLifetimeMs: 300_000,
    log,
    observer: {},
    onSize: (n) => sizes.push(n),
    ...options,
  });
  const use = async (credential: typeof ALPHA): Promise<string | Error> => {
    const source = cache.authorizerFor(credential);
    if (source instanceof Error) return source;
    const got = tokenOf(source).catch((err: Error) => err);
    await settle();
    return got;
  };
  return { clock, fetcher, log, cache, fetches, sizes, use };
}

/** The token a request gets from a held token, waiting as a request waits. */
const tokenOf = (held: HeldToken): Promise<string> => held.authorize().then((auth) => auth.token);

const rejected = () =>
  new TokenFetchError('rejected', 'token endpoint answered 401 invalid_client', { status: 401, oauthError: 'invalid_client' });

describe('pass-through token sources', () => {
  it('gives the same credentials the same source, and a wrong secret a source of its own', async () => {
    const t = setup();
    const a = t.cache.authorizerFor(ALPHA);
    expect(t.cache.authorizerFor({ ...ALPHA })).toBe(a);
    expect(t.cache.authorizerFor({ ...ALPHA, clientSecret: 'wrong' })).not.toBe(a);
    expect(await t.use(ALPHA)).toBe('tok-alpha-id-1');
    expect(t.cache.size).toBe(2);
    // Said as each joined with its first token.
    expect(t.sizes).toEqual([1, 2]);
  });

  it('drops an entry that served no request for a whole token lifetime: no fetch after it, and its timers stop', async () => {
    const t = setup();
    const usedAt = t.clock.now();
    expect(await t.use(ALPHA)).toBe('tok-alpha-id-1');
    await t.clock.advance(LIFETIME - 1);
    expect(t.cache.size).toBe(1);
    await t.clock.advance(2 * LIFETIME);
    expect(t.cache.size).toBe(0);
    expect(t.sizes.at(-1)).toBe(0);
    expect(t.clock.pending).toBe(0);
    expect(t.fetcher.calls.filter((c) => c.at >= usedAt + LIFETIME)).toEqual([]);
    const fetched = t.fetcher.calls.length;
    await t.clock.advance(10 * LIFETIME);
    expect(t.fetcher.calls).toHaveLength(fetched);
  });

  it('keeps refreshing an entry while it serves requests', async () => {
    const t = setup();
    await t.use(ALPHA);
    for (let i = 0; i < 5; i++) {
      await t.clock.advance(LIFETIME / 2);
      expect(typeof (await t.use(ALPHA))).toBe('string');
    }
    expect(t.cache.size).toBe(1);
    expect(t.fetcher.calls.length).toBeGreaterThan(2);
  });

  it('stops the timers of an entry the cache evicts', async () => {
    const t = setup({ max: 1 });
    await t.use(ALPHA);
    await t.use(BETA);
    expect(t.cache.size).toBe(1);
    await t.clock.advance(LIFETIME / 2);
    await t.use(BETA);
    await t.clock.advance(LIFETIME / 2);
    expect(t.fetcher.calls.filter((c) => c.credential.clientId === 'alpha-id')).toHaveLength(1);
    expect(t.sizes.every((n) => n <= 1)).toBe(true);
  });

  it('tells a request waiting on an evicted entry that it was evicted, not that the proxy is shutting down', async () => {
    const t = setup({ max: 1 });
    expect(await t.use(ALPHA)).toBe('tok-alpha-id-1');
    const alpha = t.cache.authorizerFor(ALPHA) as HeldToken;
    // The gateway refused alpha's token: a new one is fetched, and never comes.
    t.fetcher.answer = undefined;
    alpha.invalidate('tok-alpha-id-1');
    const waiting = tokenOf(alpha).catch((err: Error) => err);
    await settle();
    // Beta's first token makes it a holder: the least recently used one, alpha, is evicted.
    t.fetcher.answer = () => ({ accessToken: 'tok-beta', lifetimeMs: LIFETIME });
    expect(await t.use(BETA)).toBe('tok-beta');
    const err = await waiting;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/TOKEN_CACHE_MAX/);
    expect((err as Error).message).not.toMatch(/shutting down/);
  });

  it('answers rejected credentials invalid_client and asks the token endpoint again only after 10 s', async () => {
    const t = setup();
    t.fetcher.answer = () => rejected();
    expect(await t.use(ALPHA)).toBeInstanceOf(InvalidClientError);
    expect(t.cache.size).toBe(0);
    for (let i = 0; i < 50; i++) expect(t.cache.authorizerFor(ALPHA)).toBeInstanceOf(InvalidClientError);
    await t.clock.advance(REJECTION_MEMORY_MS - 1);
    expect(t.cache.authorizerFor(ALPHA)).toBeInstanceOf(InvalidClientError);
    expect(t.fetcher.calls).toHaveLength(1);
    await t.clock.advance(1);
    expect(await t.use(ALPHA)).toBeInstanceOf(InvalidClientError);
    expect(t.fetcher.calls).toHaveLength(2);
    expect(t.fetches).toEqual(['rejected', 'rejected']);
    // Other credentials are not affected.
    t.fetcher.answer = () => ({ accessToken: 'tok-beta', lifetimeMs: LIFETIME });
    expect(await t.use(BETA)).toBe('tok-beta');
  });

  it('answers every waiting request of a rejected credential invalid_client', async () => {
    const t = setup();
    t.fetcher.answer = undefined;
    const source = t.cache.authorizerFor(ALPHA) as HeldToken;
    const waiting = Array.from({ length: 5 }, () => tokenOf(source).catch((err: Error) => err));
    await settle();
    t.fetcher.last.fail(rejected());
    for (const w of await Promise.all(waiting)) expect(w).toBeInstanceOf(InvalidClientError);
    expect(t.fetcher.calls).toHaveLength(1);
  });

  it('never logs a client id or secret', async () => {
    const t = setup();
    await t.use(ALPHA);
    t.fetcher.answer = () => rejected();
    await t.use(BETA);
    await t.clock.advance(2 * LIFETIME);
    const text = t.log.text();
    for (const s of [ALPHA.clientId, ALPHA.clientSecret, BETA.clientId, BETA.clientSecret]) expect(text).not.toContain(s);
  });
});

/** The `n`th of many distinct credentials. */
const nth = (n: number) => ({ clientId: `flood-${n}`, clientSecret: `wrong-${n}` });

describe('pass-through credentials by the thousand', () => {
  it(`tries at most ${NEW_CREDENTIALS_IN_FLIGHT} new credentials at once, the last places kept for one turned away before; past that 503 with Retry-After, a holder served`, async () => {
    const t = setup();
    expect(await t.use(ALPHA)).toBe('tok-alpha-id-1');
    t.fetcher.answer = undefined;
    // Never more than the per-second bound in one second: a second apart each time it is reached.
    const tried = [];
    for (let i = 0; tried.length < NEW_CREDENTIALS_IN_FLIGHT - RESERVED_FOR_RETRIES; i++) {
      await t.clock.advance(1000);
      for (let j = 0; j < 4 && tried.length < NEW_CREDENTIALS_IN_FLIGHT - RESERVED_FOR_RETRIES; j++)
        tried.push(t.cache.authorizerFor(nth(i * 4 + j)));
    }
    expect(tried.filter((a) => a instanceof Error)).toEqual([]);
    expect(t.fetcher.calls).toHaveLength(1 + NEW_CREDENTIALS_IN_FLIGHT - RESERVED_FOR_RETRIES);
    await t.clock.advance(1000);
    // One never seen is turned away; the same one coming back takes a reserved place.
    const refused = t.cache.authorizerFor(nth(1000));
    expect(refused).toBeInstanceOf(TokenUnavailableError);
    expect((refused as TokenUnavailableError).retryAfterS).toBe(1);
    expect(t.cache.authorizerFor(nth(1001))).toBeInstanceOf(TokenUnavailableError);
    await t.clock.advance(1000);
    expect(t.cache.authorizerFor(nth(1000))).not.toBeInstanceOf(Error);
    expect(t.cache.authorizerFor(nth(1001))).not.toBeInstanceOf(Error);
    // Every place taken: even one turned away before waits for one to free.
    expect(t.cache.authorizerFor(nth(1002))).toBeInstanceOf(TokenUnavailableError);
    await t.clock.advance(1000);
    expect(t.cache.authorizerFor(nth(1002))).toBeInstanceOf(TokenUnavailableError);
    expect(t.fetcher.calls).toHaveLength(1 + NEW_CREDENTIALS_IN_FLIGHT);
    // A credential that holds a token is served throughout, and one already trying waits as before.
    expect(await t.use(ALPHA)).toBe('tok-alpha-id-1');
    expect(t.cache.authorizerFor(nth(3))).toBe(tried[3]);
    // The first fetches end: new credentials are tried again.
    for (const call of t.fetcher.calls.slice(1)) call.succeed(`tok-${call.credential.clientId}`, LIFETIME);
    await settle();
    expect(t.cache.authorizerFor(nth(1002))).not.toBeInstanceOf(Error);
  });

  it(`tries at most ${NEW_CREDENTIALS_PER_SECOND} new credentials in any one second, the last for those turned away before`, async () => {
    const t = setup();
    const answers = [];
    for (let i = 0; i < 3 * NEW_CREDENTIALS_PER_SECOND; i++) answers.push(await t.use(nth(i)));
    const unseen = NEW_CREDENTIALS_PER_SECOND - RESERVED_FOR_RETRIES;
    expect(answers.filter((a) => typeof a === 'string')).toHaveLength(unseen);
    expect(answers.filter((a) => a instanceof TokenUnavailableError)).toHaveLength(3 * NEW_CREDENTIALS_PER_SECOND - unseen);
    // Within the same second, two turned away come back and are tried; a third is not.
    expect(typeof (await t.use(nth(unseen)))).toBe('string');
    expect(typeof (await t.use(nth(unseen + 1)))).toBe('string');
    expect(await t.use(nth(unseen + 2))).toBeInstanceOf(TokenUnavailableError);
    // A second later, the window has moved on.
    await t.clock.advance(1000);
    expect(typeof (await t.use(nth(100)))).toBe('string');
    expect(t.fetcher.calls).toHaveLength(NEW_CREDENTIALS_PER_SECOND + 1);
  });

  it('does not retry in the background a credential whose first fetch failed: its caller hears 503, and its next request tries again', async () => {
    const t = setup();
    t.fetcher.answer = () => new TokenFetchError('timeout', 'timeout after 10000 ms');
    const first = await t.use(BETA);
    expect(first).toBeInstanceOf(TokenUnavailableError);
    expect((first as Error).message).toContain('timeout after 10000 ms');
    await t.clock.advance(10 * LIFETIME);
    expect(t.fetcher.calls).toHaveLength(1);
    t.fetcher.answer = () => ({ accessToken: 'tok-beta', lifetimeMs: LIFETIME });
    expect(await t.use(BETA)).toBe('tok-beta');
    expect(t.fetcher.calls).toHaveLength(2);
  });

  it('never evicts a credential that holds a token for one that never had one', async () => {
    const t = setup({ max: 1 });
    expect(await t.use(ALPHA)).toBe('tok-alpha-id-1');
    for (let i = 0; i < 30; i++) {
      t.fetcher.answer = () => (i % 2 === 0 ? rejected() : new TokenFetchError('server_error', 'token endpoint answered 503'));
      await t.use(nth(i));
      await t.clock.advance(100);
    }
    t.fetcher.answer = () => ({ accessToken: 'never', lifetimeMs: LIFETIME });
    expect(await t.use(ALPHA)).toBe('tok-alpha-id-1');
    expect(t.fetcher.calls.filter((c) => c.credential.clientId === ALPHA.clientId)).toHaveLength(1);
    expect(t.cache.size).toBe(1);
  });

  it('logs failed credentials and refused new ones once per 10 s with a count, not a line each', async () => {
    const t = setup();
    t.fetcher.answer = () => rejected();
    for (let i = 0; i < 200; i++) {
      await t.use(nth(i));
      await t.clock.advance(50);
    }
    // 10 s of a flood: one line each for its first rejection and its first refusal, one line each with the counts.
    const lines = t.log.lines.filter((l) => l.level !== 'debug');
    expect(lines.length).toBeLessThanOrEqual(4);
    expect(lines[0]).toMatchObject({ level: 'error', msg: 'token endpoint rejected the client credentials' });
    await t.clock.advance(10_000);
    const counted = t.log.lines.filter((l) => l.msg === 'more pass-through credentials failed to get a token');
    const refusedCounts = t.log.lines.filter((l) => l.msg === 'more requests with new pass-through credentials were answered 503');
    const failed = counted.reduce((n, l) => n + (l.obj as { failed: number }).failed, 0);
    const refused = refusedCounts.reduce((n, l) => n + (l.obj as { refused: number }).refused, 0);
    // Every credential is accounted for: logged whole, counted as failed, or counted as refused.
    expect(1 + failed + 1 + refused).toBe(200);
    expect(t.log.lines.filter((l) => l.level !== 'debug').length).toBeLessThanOrEqual(6);
    expect(t.fetcher.calls).toHaveLength(1 + failed);
  });
});

describe('Basic credentials', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');

  it('reads id and secret, the secret keeping any further colons', () => {
    expect(parseBasicCredentials(`Basic ${b64('id:se:cr:et')}`)).toEqual({ clientId: 'id', clientSecret: 'se:cr:et' });
    expect(parseBasicCredentials(`bAsIc  ${b64('id:s')}`)).toEqual({ clientId: 'id', clientSecret: 's' });
  });

  it('leaves requests without Basic credentials to the configured credential', () => {
    expect(parseBasicCredentials(undefined)).toBeUndefined();
    expect(parseBasicCredentials('Bearer abc')).toBeUndefined();
    expect(parseBasicCredentials('Basically')).toBeUndefined();
  });

  it.each([
    ['no credentials', 'Basic'],
    ['not base64', 'Basic !!!'],
    ['a lone base64 character too many', 'Basic aWQ6c2VjcmV0a'],
    ['no colon', `Basic ${b64('idsecret')}`],
    ['an empty id', `Basic ${b64(':secret')}`],
    ['not UTF-8', `Basic ${Buffer.from([0x69, 0x3a, 0xff]).toString('base64')}`],
  ])('answers %s invalid_client without quoting the header', (_what, header) => {
    const err = parseBasicCredentials(header);
    expect(err).toBeInstanceOf(InvalidClientError);
    expect((err as Error).message).not.toContain(header.slice(6) || '\u0000');
  });
});

describe('credentialKeyer', () => {
  it('is HMAC-SHA256 of id and secret, as createHmac computes it, for short and long keys', () => {
    for (const key of [randomBytes(32), randomBytes(100)]) {
      const keyOf = credentialKeyer(key);
      for (const c of [
        { clientId: 'app', clientSecret: 's3cret' },
        { clientId: 'ünï', clientSecret: 'p:a\0ss' },
      ]) {
        expect(keyOf(c)).toBe(createHmac('sha256', key).update(`${c.clientId}\0${c.clientSecret}`).digest('base64url'));
      }
    }
  });
});
