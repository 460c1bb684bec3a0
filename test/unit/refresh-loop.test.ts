import { describe, expect, it } from 'vitest';
import { TokenUnavailableError } from '../../src/core/errors.js';
import { ClientAssertionError, TokenFetchError, type FetchOutcome } from '../../src/token/errors.js';
import type { TokenState } from '../../src/token/token-state.js';
import { testSource, type TestSource, type TestSourceOptions } from '../helpers/token-loop.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { FakeFetcher, FakeLog, track } from '../helpers/fakes.js';

const T0 = Date.UTC(2026, 0, 1);
const LIFETIME = 100_000;
const ID = 'app-client';
const SECRET = 'secret-one-!@#';
const SECRET_2 = 'secret-two-$%^';

function setup(options: Partial<TestSourceOptions> = {}) {
  const clock = new FakeClock(T0);
  const fetcher = new FakeFetcher(clock);
  const log = new FakeLog();
  const fetches: { outcome: FetchOutcome; durationS: number }[] = [];
  const states: TokenState[] = [];
  const jitter = { value: 0 };
  const source = testSource({
    label: 'configured',
    credential: { clientId: ID, clientSecret: SECRET },
    fetchToken: fetcher.fetchToken,
    clock,
    random: () => jitter.value,
    refreshRatio: 0.8,
    waitTimeoutMs: 5_000,
    log,
    observer: {
      onFetch: (outcome, durationS) => fetches.push({ outcome, durationS }),
      onState: (state) => states.push(state),
    },
    ...options,
  });
  /** Starts the source and answers its first fetch with `token`. */
  const holding = async (token = 'tok-A', lifetimeMs = LIFETIME): Promise<void> => {
    source.start();
    await settle();
    fetcher.last.succeed(token, lifetimeMs);
    await settle();
  };
  return { clock, fetcher, log, source, fetches, states, jitter, holding };
}

const serverError = () => new TokenFetchError('server_error', 'token endpoint answered 500', { status: 500 });
const rateLimited = (retryAfterMs: number) =>
  new TokenFetchError('rate_limited', 'token endpoint answered 429', { status: 429, retryAfterMs });
const rejected = () =>
  new TokenFetchError('rejected', 'token endpoint answered 401 invalid_client: bad secret', {
    status: 401,
    oauthError: 'invalid_client',
    oauthErrorDescription: 'bad secret',
  });

describe('The refresh loop: refresh schedule', () => {
  it('refreshes at 80 % of the lifetime when the jitter is zero', async () => {
    const t = setup();
    await t.holding();
    await t.clock.advance(79_999);
    expect(t.fetcher.calls).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.fetcher.calls).toHaveLength(2);
    expect(t.fetcher.last.at - T0).toBe(80_000);
  });

  it('spreads the first refresh of a process uniformly between half the ratio and the ratio', async () => {
    for (const r of [0, 0.25, 0.5, 0.999_999]) {
      const t = setup();
      t.jitter.value = r;
      await t.holding();
      await t.clock.advance(LIFETIME);
      const refreshAt = t.fetcher.calls[1]!.at - T0;
      expect(Math.abs(refreshAt - 80_000 * (1 - r / 2))).toBeLessThan(1);
      expect(refreshAt).toBeGreaterThanOrEqual(40_000);
    }
  });

  it('refreshes later at the ratio less up to a tenth of the lifetime, never later than the ratio', async () => {
    for (const r of [0, 0.1, 0.5, 0.9, 0.999_999]) {
      const t = setup();
      t.jitter.value = r;
      await t.holding();
      await t.clock.advance(Math.ceil(80_000 * (1 - r / 2)));
      const secondAt = t.fetcher.calls[1]!.at;
      t.fetcher.last.succeed('tok-B', LIFETIME);
      await t.clock.advance(LIFETIME);
      const refreshAt = t.fetcher.calls[2]!.at - secondAt;
      expect(Math.abs(refreshAt - (80_000 - r * 10_000))).toBeLessThan(1);
      expect(refreshAt).toBeGreaterThan(70_000);
      expect(refreshAt).toBeLessThanOrEqual(80_000);
    }
  });

  it('honours another refresh ratio: the first refresh within half that ratio and the ratio, the later ones within a tenth below it', async () => {
    const t = setup({ refreshRatio: 0.5 });
    t.jitter.value = 0.5;
    await t.holding();
    await t.clock.advance(37_500);
    // The first at 0.5 * (1 - 0.5 / 2) of the lifetime; the next at 0.5 - 0.5 * 0.1.
    expect(t.fetcher.calls[1]!.at - T0).toBe(37_500);
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await t.clock.advance(LIFETIME);
    expect(t.fetcher.calls[2]!.at - t.fetcher.calls[1]!.at).toBe(45_000);
  });

  it('answers get() at once from the held token while a refresh is in flight', async () => {
    const t = setup();
    await t.holding();
    await t.clock.advance(85_000);
    expect(t.fetcher.calls).toHaveLength(2);
    const got = track(t.source.get());
    await settle();
    expect(got).toMatchObject({ state: 'resolved', value: 'tok-A' });
    expect(t.source.current()).toBe('tok-A');
  });

  it('measures the lifetime from when the request was sent, not from when the answer came', async () => {
    const t = setup();
    t.source.start();
    await t.clock.advance(3_000);
    t.fetcher.last.succeed('tok-A', LIFETIME);
    await settle();
    // usable until sent + lifetime - 10 s = 90 s after the request was sent
    await t.clock.advance(90_000 - 3_000 - 1);
    expect(t.source.current()).toBe('tok-A');
    await t.clock.advance(1);
    expect(t.source.current()).toBeUndefined();
  });
});

describe('The refresh loop: injected schedule', () => {
  it('takes the refresh offset and the backoff cap from the schedule it is given', async () => {
    const offsets: number[] = [];
    const t = setup({
      schedule: {
        refreshOffsetMs: (lifetime) => {
          offsets.push(lifetime);
          return 12_345;
        },
        backoffCapMs: () => 2_000,
      },
    });
    t.jitter.value = 0.999;
    await t.holding();
    await t.clock.advance(12_344);
    expect(t.fetcher.calls).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.fetcher.calls).toHaveLength(2);
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await settle();
    expect(offsets).toEqual([LIFETIME, LIFETIME]);
    // Failures back off by at most the schedule's cap, whatever the held token's life.
    t.fetcher.answer = serverError;
    await t.clock.advance(30_000);
    const gaps = t.fetcher.calls.slice(3, 8).map((c, i) => c.at - t.fetcher.calls[i + 2]!.at);
    expect(gaps).toEqual([499, 999, 1_998, 1_998, 1_998]);
  });
});

describe('The refresh loop: backoff', () => {
  it('takes a token that arrives with no usable life left as a failure and backs off, instead of refetching at once', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    t.source.start();
    await t.clock.advance(2_000);
    t.fetcher.last.succeed('tok-late', 1_000);
    await settle();
    expect(t.source.current()).toBeUndefined();
    expect(t.fetches.at(-1)?.outcome).toBe('invalid_response');
    expect(t.source.state.consecutiveFailures).toBe(1);
    await t.clock.advance(498);
    expect(t.fetcher.calls).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.fetcher.calls).toHaveLength(2);
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await settle();
    expect(t.source.current()).toBe('tok-B');
  });

  it('waits 0.5, 1, 2, 4 ... seconds up to a 30 s cap between failed fetches when the jitter is at its top', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    t.fetcher.answer = serverError;
    t.source.start();
    await t.clock.advance(200_000);
    const gaps = t.fetcher.calls.slice(1, 11).map((c, i) => c.at - t.fetcher.calls[i]!.at);
    expect(gaps).toEqual([499, 999, 1_998, 3_996, 7_992, 15_984, 29_970, 29_970, 29_970, 29_970]);
    expect(t.source.state.consecutiveFailures).toBe(t.fetcher.calls.length);
  });

  it("grows the cap to a quarter of the held token's usable life, and back to 30 s once none is held", async () => {
    const t = setup();
    const HOUR = 3_600_000;
    t.jitter.value = 0;
    await t.holding('tok-A', HOUR);
    t.jitter.value = 0.999_999;
    t.fetcher.answer = serverError;
    // The first refresh at 80 % of the hour fails again and again while the token is still valid.
    await t.clock.advance(0.8 * HOUR);
    const start = t.fetcher.calls.length;
    await t.clock.advance(0.2 * HOUR);
    const gaps = t.fetcher.calls.slice(start).map((c, i, a) => c.at - (i === 0 ? t.fetcher.calls[start - 1]! : a[i - 1]!).at);
    const validAt = (at: number) => T0 + HOUR - 10_000 - at;
    // Longer than 30 s while a quarter of the remaining life is: never past the last usable moment.
    expect(Math.max(...gaps)).toBeGreaterThan(30_000);
    for (const c of t.fetcher.calls.slice(start)) expect(c.at).toBeLessThanOrEqual(T0 + HOUR);
    for (const [i, c] of t.fetcher.calls.slice(start).entries()) {
      const prev = i === 0 ? t.fetcher.calls[start - 1]! : t.fetcher.calls[start + i - 1]!;
      expect(c.at - prev.at).toBeLessThanOrEqual(Math.max(30_000, validAt(prev.at) / 4) + 1);
    }
    // Without a valid token the gaps are 30 s at most.
    await t.clock.advance(10 * 60_000);
    const late = t.fetcher.calls.filter((c) => c.at > T0 + HOUR + 60_000);
    expect(late.length).toBeGreaterThan(5);
    for (let i = 1; i < late.length; i++) expect(late[i]!.at - late[i - 1]!.at).toBeLessThanOrEqual(30_000);
  });

  it('retries at once when the jitter is zero (full jitter)', async () => {
    const t = setup();
    t.source.start();
    for (let i = 1; i <= 3; i++) {
      await settle();
      expect(t.fetcher.calls).toHaveLength(i);
      t.fetcher.last.fail(serverError());
      await t.clock.advance(0);
    }
    expect(t.fetcher.calls.map((c) => c.at - T0)).toEqual([0, 0, 0, 0]);
  });

  it("waits at least the token endpoint's Retry-After before the next try", async () => {
    const t = setup();
    t.jitter.value = 0.999;
    t.source.start();
    await settle();
    t.fetcher.last.fail(rateLimited(60_000));
    await t.clock.advance(59_999);
    expect(t.fetcher.calls).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.fetcher.calls).toHaveLength(2);
  });

  it('keeps the longer backoff when Retry-After asks for less', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    t.source.start();
    await settle();
    t.fetcher.last.fail(serverError());
    await t.clock.advance(499);
    expect(t.fetcher.calls).toHaveLength(2);
    t.fetcher.last.fail(rateLimited(100));
    await t.clock.advance(998);
    expect(t.fetcher.calls).toHaveLength(2);
    await t.clock.advance(1);
    expect(t.fetcher.calls).toHaveLength(3);
  });

  it('starts the backoff over after a success', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    t.source.start();
    await settle();
    t.fetcher.last.fail(serverError());
    await t.clock.advance(499);
    t.fetcher.last.fail(serverError());
    await t.clock.advance(999);
    t.fetcher.last.succeed('tok-A', LIFETIME);
    await settle();
    expect(t.source.state.consecutiveFailures).toBe(0);
    // the refresh comes at 40.04 % of the lifetime (jitter 0.999) and fails: the first retry waits 0.5 s again
    await t.clock.advance(70_010);
    expect(t.fetcher.calls).toHaveLength(4);
    t.fetcher.last.fail(serverError());
    await t.clock.advance(498);
    expect(t.fetcher.calls).toHaveLength(4);
    await t.clock.advance(1);
    expect(t.fetcher.calls).toHaveLength(5);
  });
});

describe('The refresh loop: expiry', () => {
  it.each([
    [100_000, 90_000],
    [50_000, 45_000],
    [300_000, 290_000],
    [8_000, 7_200],
  ])('does not use a token of %i ms lifetime from %i ms on (its last min(10 s, lifetime / 10))', async (lifetime, usableUntil) => {
    const t = setup();
    await t.holding('tok-A', lifetime);
    await t.clock.advance(usableUntil - 1);
    expect(t.source.current()).toBe('tok-A');
    // the refresh is still in flight: nothing replaces the token
    expect(t.fetcher.calls).toHaveLength(2);
    await t.clock.advance(1);
    expect(t.source.current()).toBeUndefined();
    const got = track(t.source.get());
    await settle();
    expect(got.state).toBe('pending');
  });

  it('keeps using the current token while refreshes fail, and never after it expires', async () => {
    const t = setup();
    t.jitter.value = 0.5;
    await t.holding('tok-A', LIFETIME);
    t.fetcher.answer = serverError;
    await t.clock.advance(89_999);
    expect(t.fetcher.calls.length).toBeGreaterThan(3);
    expect(t.source.current()).toBe('tok-A');
    expect(await t.source.get()).toBe('tok-A');
    await t.clock.advance(1);
    expect(t.source.current()).toBeUndefined();
    const got = track(t.source.get());
    await t.clock.advance(60_000);
    expect(got.state).toBe('rejected');
    expect(got.error).toBeInstanceOf(TokenUnavailableError);
    expect(t.source.current()).toBeUndefined();
  });
});

describe('The refresh loop: single flight and waiting', () => {
  it('makes exactly one fetch for 1,000 concurrent get() callers at a cold start', async () => {
    const t = setup();
    const got = Array.from({ length: 1_000 }, () => t.source.get());
    await settle();
    expect(t.fetcher.calls).toHaveLength(1);
    t.fetcher.last.succeed('tok-A', LIFETIME);
    const tokens = await Promise.all(got);
    expect(new Set(tokens)).toEqual(new Set(['tok-A']));
    expect(t.fetcher.calls).toHaveLength(1);
  });

  it('adds no fetch for callers that arrive while the first fetch after start() is in flight', async () => {
    const t = setup();
    t.source.start();
    const got = Array.from({ length: 1_000 }, () => t.source.get());
    await t.clock.advance(1_000);
    expect(t.fetcher.calls).toHaveLength(1);
    t.fetcher.last.succeed('tok-A', LIFETIME);
    expect(await Promise.all(got)).toHaveLength(1_000);
    expect(t.fetcher.calls).toHaveLength(1);
  });

  it('rejects get() with TokenUnavailableError after waitTimeoutMs', async () => {
    const t = setup();
    t.source.start();
    const got = track(t.source.get());
    await t.clock.advance(4_999);
    expect(got.state).toBe('pending');
    await t.clock.advance(1);
    expect(got.state).toBe('rejected');
    expect(got.error).toBeInstanceOf(TokenUnavailableError);
    expect((got.error as TokenUnavailableError).retryAfterS).toBeGreaterThanOrEqual(1);
    // the fetch still counts: a late token serves the next caller
    t.fetcher.last.succeed('tok-A', LIFETIME);
    await settle();
    expect(t.source.current()).toBe('tok-A');
  });

  it('rejects get() at once when the next attempt is due only after the wait would end', async () => {
    const t = setup();
    t.source.start();
    await settle();
    t.fetcher.last.fail(rateLimited(60_000));
    await settle();
    const got = track(t.source.get());
    await settle();
    expect(got.state).toBe('rejected');
    const err = got.error as TokenUnavailableError;
    expect(err).toBeInstanceOf(TokenUnavailableError);
    expect(err.retryAfterS).toBe(60);
    expect((err.cause as TokenFetchError).outcome).toBe('rate_limited');
    expect(t.fetcher.calls).toHaveLength(1);
  });

  it('rejects a waiting get() as soon as a failure puts the next attempt past its deadline', async () => {
    const t = setup();
    t.source.start();
    await t.clock.advance(1_000);
    const got = track(t.source.get());
    t.fetcher.last.fail(rateLimited(30_000));
    await settle();
    expect(got.state).toBe('rejected');
    expect((got.error as TokenUnavailableError).retryAfterS).toBe(30);
    expect(t.clock.now() - T0).toBe(1_000);
  });

  it('serves a waiting get() from a retry that succeeds within the wait', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    const got = track(t.source.get());
    await settle();
    t.fetcher.last.fail(serverError());
    await t.clock.advance(499);
    expect(t.fetcher.calls).toHaveLength(2);
    t.fetcher.last.succeed('tok-A', LIFETIME);
    await settle();
    expect(got).toMatchObject({ state: 'resolved', value: 'tok-A' });
  });

  it('rejects waiting callers and fetches no more once stopped', async () => {
    const t = setup();
    t.source.start();
    const got = track(t.source.get());
    t.source.stop();
    await settle();
    expect(got.state).toBe('rejected');
    expect(got.error).toBeInstanceOf(TokenUnavailableError);
    t.fetcher.last.succeed('tok-A', LIFETIME);
    await t.clock.advance(LIFETIME * 2);
    expect(t.fetcher.calls).toHaveLength(1);
    expect(t.source.current()).toBeUndefined();
  });
});

describe('The refresh loop: forced refresh after a gateway 401', () => {
  it('drops the rejected token and fetches a new one once', async () => {
    const t = setup();
    await t.holding('tok-A');
    expect(t.source.invalidate('tok-A')).toBe(true);
    expect(t.source.current()).toBeUndefined();
    await settle();
    expect(t.fetcher.calls).toHaveLength(2);
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await settle();
    expect(t.source.current()).toBe('tok-B');
    expect(t.fetcher.calls).toHaveLength(2);
  });

  it('refuses a second forced refresh within 5 s and makes no fetch for it', async () => {
    const t = setup();
    await t.holding('tok-A');
    t.source.invalidate('tok-A');
    await settle();
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await t.clock.advance(4_999);
    expect(t.source.invalidate('tok-B')).toBe(false);
    await settle();
    expect(t.fetcher.calls).toHaveLength(2);
    expect(t.source.current()).toBe('tok-B');
    await t.clock.advance(1);
    expect(t.source.invalidate('tok-B')).toBe(true);
    await settle();
    expect(t.fetcher.calls).toHaveLength(3);
  });

  it('answers true without a fetch for a token that has already been replaced', async () => {
    const t = setup();
    await t.holding('tok-A');
    await t.clock.advance(80_000);
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await settle();
    expect(t.source.invalidate('tok-A')).toBe(true);
    await settle();
    expect(t.fetcher.calls).toHaveLength(2);
    expect(t.source.current()).toBe('tok-B');
  });

  it("does not fetch before the token endpoint's Retry-After is over", async () => {
    const t = setup();
    await t.holding('tok-A');
    await t.clock.advance(80_000);
    t.fetcher.last.fail(rateLimited(60_000));
    await t.clock.advance(1_000);
    expect(t.source.invalidate('tok-A')).toBe(true);
    expect(t.source.current()).toBeUndefined();
    await t.clock.advance(58_999);
    expect(t.fetcher.calls).toHaveLength(2);
    await t.clock.advance(1);
    expect(t.fetcher.calls).toHaveLength(3);
  });
});

describe('The refresh loop: secret reload', () => {
  it('fetches with the new secret at once and keeps the held token meanwhile', async () => {
    const t = setup();
    await t.holding('tok-A');
    await t.clock.advance(10_000);
    t.source.setCredential({ clientId: ID, clientSecret: SECRET_2 });
    await settle();
    expect(t.fetcher.calls).toHaveLength(2);
    expect(t.fetcher.last.credential).toEqual({ clientId: ID, clientSecret: SECRET_2 });
    expect(t.fetcher.last.at - T0).toBe(10_000);
    expect(t.source.current()).toBe('tok-A');
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await settle();
    expect(t.source.current()).toBe('tok-B');
  });

  it('fetches with the new secret at once even while backing off', async () => {
    const t = setup();
    t.source.start();
    await settle();
    t.fetcher.last.fail(rateLimited(60_000));
    await t.clock.advance(2_000);
    t.source.setCredential({ clientId: ID, clientSecret: SECRET_2 });
    await settle();
    expect(t.fetcher.calls).toHaveLength(2);
    expect(t.fetcher.last.credential.clientSecret).toBe(SECRET_2);
    expect(t.fetcher.last.at - T0).toBe(2_000);
  });

  it('fetches again with the new secret when it arrives during a fetch with the old one', async () => {
    const t = setup();
    t.source.start();
    await settle();
    t.source.setCredential({ clientId: ID, clientSecret: SECRET_2 });
    await settle();
    expect(t.fetcher.calls).toHaveLength(1);
    t.fetcher.last.succeed('tok-old-secret', LIFETIME);
    await settle();
    expect(t.fetcher.calls).toHaveLength(2);
    expect(t.fetcher.last.credential.clientSecret).toBe(SECRET_2);
    expect(t.source.current()).toBe('tok-old-secret');
  });

  it('fetches with the new secret at once when the fetch with the old one fails meanwhile', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    t.source.start();
    await settle();
    t.source.setCredential({ clientId: ID, clientSecret: SECRET_2 });
    t.fetcher.last.fail(rejected());
    await settle();
    expect(t.fetcher.calls).toHaveLength(2);
    expect(t.fetcher.last.credential.clientSecret).toBe(SECRET_2);
    expect(t.fetcher.last.at).toBe(T0);
  });

  it('keeps the current token in use until it expires when the new secret is rejected', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    await t.holding('tok-A');
    await t.clock.advance(10_000);
    t.fetcher.answer = rejected;
    t.source.setCredential({ clientId: ID, clientSecret: SECRET_2 });
    await t.clock.advance(79_999);
    expect(t.source.current()).toBe('tok-A');
    expect(t.fetcher.calls.slice(1).every((c) => c.credential.clientSecret === SECRET_2)).toBe(true);
    expect(t.fetcher.calls.length).toBeGreaterThan(3);
    await t.clock.advance(1);
    expect(t.source.current()).toBeUndefined();
    expect(t.log.at('error').length).toBeGreaterThan(0);
  });

  it('makes no fetch for a reload that changes nothing', async () => {
    const t = setup();
    await t.holding('tok-A');
    t.source.setCredential({ clientId: ID, clientSecret: SECRET });
    await settle();
    expect(t.fetcher.calls).toHaveLength(1);
  });
});

describe('The refresh loop: refreshNow', () => {
  it('fetches at once with the same credential when a key or assertion file changed, even while backing off, keeping the held token', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    await t.holding('tok-A');
    await t.clock.advance(80_000);
    t.fetcher.last.fail(serverError());
    await settle();
    expect(t.fetcher.calls).toHaveLength(2);
    t.source.refreshNow('client assertion file changed');
    await settle();
    expect(t.fetcher.calls).toHaveLength(3);
    expect(t.fetcher.last.credential).toEqual({ clientId: ID, clientSecret: SECRET });
    expect(t.source.current()).toBe('tok-A');
    expect(t.log.at('info').at(-1)?.obj).toMatchObject({ reason: 'client assertion file changed' });
  });
});

describe('The refresh loop: state of a failure', () => {
  it('is reported once its retry is scheduled, so stopping the source there leaves no timer behind', async () => {
    const seen: string[] = [];
    const holder: { source?: TestSource } = {};
    const t = setup({
      observer: {
        onState: (state) => {
          if (state.lastError === undefined) return;
          seen.push(state.lastError.outcome);
          holder.source?.stop();
        },
      },
    });
    holder.source = t.source;
    t.jitter.value = 0.5;
    t.source.start();
    await settle();
    t.fetcher.last.fail(rejected());
    await settle();
    expect(seen).toEqual(['rejected']);
    await t.clock.advance(60_000);
    expect(t.fetcher.calls).toHaveLength(1);
  });
});

describe('The refresh loop: observer and log', () => {
  it('reports each fetch outcome and its duration', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    t.source.start();
    await t.clock.advance(250);
    t.fetcher.last.fail(new Error('socket hang up'));
    await t.clock.advance(499);
    t.fetcher.last.fail(rateLimited(1_000));
    await t.clock.advance(1_000);
    await t.clock.advance(100);
    t.fetcher.last.succeed('tok-A', LIFETIME);
    await settle();
    expect(t.fetches).toEqual([
      { outcome: 'network_error', durationS: 0.25 },
      { outcome: 'rate_limited', durationS: 0 },
      { outcome: 'success', durationS: 0.1 },
    ]);
  });

  it('publishes expiry, last usable moment, last success, consecutive failures and the last failure as they change', async () => {
    const t = setup();
    await t.holding('tok-A');
    const usable = T0 + LIFETIME - 10_000;
    expect(t.states.at(-1)).toEqual({
      expiresAtMs: T0 + LIFETIME,
      usableUntilMs: usable,
      lastSuccessAtMs: T0,
      consecutiveFailures: 0,
      lastError: undefined,
    });
    await t.clock.advance(80_000);
    t.fetcher.last.fail(serverError());
    await settle();
    expect(t.states.at(-1)).toEqual({
      expiresAtMs: T0 + LIFETIME,
      usableUntilMs: usable,
      lastSuccessAtMs: T0,
      consecutiveFailures: 1,
      lastError: expect.objectContaining({ outcome: 'server_error' }),
    });
    t.source.invalidate('tok-A');
    expect(t.states.at(-1)).toMatchObject({ expiresAtMs: 0, usableUntilMs: 0, lastSuccessAtMs: T0, consecutiveFailures: 1 });
    await t.clock.advance(0);
    expect(t.fetcher.calls).toHaveLength(3);
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await settle();
    expect(t.states.at(-1)).toEqual({
      expiresAtMs: T0 + 80_000 + LIFETIME,
      usableUntilMs: T0 + 80_000 + LIFETIME - 10_000,
      lastSuccessAtMs: T0 + 80_000,
      consecutiveFailures: 0,
      lastError: undefined,
    });
  });

  it('logs a rejected client at error level with its OAuth error, and never the secret or a token', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    await t.holding('tok-A');
    await t.clock.advance(80_000);
    t.fetcher.last.fail(rejected());
    await settle();
    const line = t.log.at('error')[0];
    expect(line?.obj).toMatchObject({ outcome: 'rejected', status: 401, error: 'invalid_client', attempt: 1 });
    t.source.setCredential({ clientId: ID, clientSecret: SECRET_2 });
    await settle();
    t.fetcher.last.succeed('tok-B', LIFETIME);
    await t.clock.advance(1_000);
    const text = t.log.text();
    for (const s of [SECRET, SECRET_2, 'tok-A', 'tok-B']) expect(text).not.toContain(s);
  });

  it('logs other failures as warnings with the next retry', async () => {
    const t = setup();
    t.jitter.value = 0.999;
    t.source.start();
    await settle();
    t.fetcher.last.fail(serverError());
    await settle();
    expect(t.log.at('error')).toHaveLength(0);
    expect(t.log.at('warn')[0]?.obj).toMatchObject({ outcome: 'server_error', attempt: 1, retryInMs: 499 });
  });

  it('logs a client assertion that was not sent naming the file and its expiry, with a hint that is not about the host', async () => {
    const t = setup({ endpoint: 'https://user:pw@idp.example/token' });
    t.source.start();
    await settle();
    const file = '/var/run/secrets/token';
    t.fetcher.last.fail(
      new ClientAssertionError(
        'network_error',
        `client assertion in ${file} expired at 2026-01-01T00:00:00.000Z: the projected token is not being rotated`,
      ),
    );
    await settle();
    const line = t.log.at('warn')[0]?.obj as Record<string, unknown>;
    expect(line).toMatchObject({ outcome: 'network_error', tokenUrl: 'https://***@idp.example/token' });
    expect(String(line.reason)).toContain(`client assertion in ${file} expired at 2026-01-01T00:00:00.000Z`);
    expect(String(line.hint)).toContain('a rotated file is tried at once');
    expect(String(line.hint)).not.toContain('host name');
    expect(t.fetches.map((f) => f.outcome)).toEqual(['network_error']);
  });
});
