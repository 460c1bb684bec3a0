import { describe, expect, it } from 'vitest';
import { Readiness } from '../../src/app/readiness.js';
import type { Readiness as ReadinessMode } from '../../src/config/config.js';
import { TokenFetchError } from '../../src/token/errors.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { FakeFetcher, FakeLog } from '../helpers/fakes.js';
import { testSource } from '../helpers/token-loop.js';

const TOKEN_URL = 'https://idp.example/token';
const LIFETIME = 100_000;
const unreachable = () => new TokenFetchError('network_error', 'token endpoint idp.example:443 unreachable (ECONNREFUSED)');

/** A configured credential's source reporting to the readiness, which has both listeners up once holding. */
function setup(mode: ReadinessMode) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const fetcher = new FakeFetcher(clock);
  const readiness = new Readiness(mode, clock);
  const source = testSource({
    label: 'configured',
    credential: { clientId: 'app', clientSecret: 's' },
    fetchToken: fetcher.fetchToken,
    clock,
    // Half of each backoff step: a failing fetch is retried later, not at once.
    random: () => 0.5,
    refreshRatio: 0.8,
    waitTimeoutMs: 5_000,
    log: new FakeLog(),
    // Its token's state reaches the readiness through the observer, as the wiring hands it.
    observer: readiness.credential('default', TOKEN_URL, {}),
  });
  /** Both listeners up, and the first token held. */
  const holding = async (): Promise<void> => {
    readiness.listen();
    source.start();
    await settle();
    fetcher.last.succeed('tok', LIFETIME);
    await settle();
  };
  return { clock, fetcher, source, readiness, holding };
}

describe('readiness', () => {
  it.each(['token', 'started'] as const)('with READINESS=%s: not ready while starting and before the first token', async (mode) => {
    const t = setup(mode);
    expect(t.readiness.check()).toEqual({ ready: false, reason: 'starting', routes: { default: { ready: false, reason: 'starting' } } });
    t.readiness.listen();
    t.source.start();
    await settle();
    expect(t.readiness.check()).toEqual({
      ready: false,
      reason: 'no valid token yet',
      routes: { default: { ready: false, reason: 'no valid token yet' } },
    });
    t.fetcher.last.fail(unreachable());
    await settle();
    expect(t.readiness.check()).toMatchObject({
      ready: false,
      reason: expect.stringMatching(/^no valid token \(last fetch: network_error: /),
    });
    t.source.stop();
  });

  it.each([
    ['token', false],
    ['started', true],
  ] as const)(
    'with READINESS=%s, once the token has expired while every fetch fails, is ready: %s, with the reason',
    async (mode, readyAfter) => {
      const t = setup(mode);
      await t.holding();
      expect(t.readiness.check()).toEqual({ ready: true, routes: { default: { ready: true } } });
      t.fetcher.answer = () => unreachable();
      await t.clock.advance(LIFETIME);
      expect(t.source.current()).toBeUndefined();
      const state = t.readiness.check();
      expect(state).toMatchObject({ ready: readyAfter, reason: expect.stringMatching(/^no valid token \(last fetch: network_error: /) });
      t.source.stop();
    },
  );

  it.each(['token', 'started'] as const)('with READINESS=%s, is not ready from the moment shutdown begins', async (mode) => {
    const t = setup(mode);
    await t.holding();
    t.readiness.stop();
    expect(t.readiness.check()).toEqual({
      ready: false,
      reason: 'shutting down',
      routes: { default: { ready: false, reason: 'shutting down' } },
    });
    t.source.stop();
  });

  it('waits for no token with only pass-through credentials', () => {
    const readiness = new Readiness('token', new FakeClock(Date.UTC(2026, 0, 1)));
    readiness.route('default');
    readiness.listen();
    expect(readiness.check()).toEqual({ ready: true, routes: { default: { ready: true } } });
  });

  it('is ready when every route is, and names the route of its first reason when there are several', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const readiness = new Readiness('token', clock);
    const eu = new FakeFetcher(clock);
    const loop = (fetcher: FakeFetcher, name: string) =>
      testSource({
        credential: { clientId: name, clientSecret: 's' },
        fetchToken: fetcher.fetchToken,
        clock,
        random: () => 0.5,
        refreshRatio: 0.8,
        waitTimeoutMs: 5_000,
        log: new FakeLog(),
        observer: readiness.credential(name, TOKEN_URL, {}),
      });
    const euSource = loop(eu, 'eu');
    readiness.route('pass');
    readiness.listen();
    euSource.start();
    await settle();
    expect(readiness.check()).toEqual({
      ready: false,
      reason: 'eu: no valid token yet',
      routes: { eu: { ready: false, reason: 'no valid token yet' }, pass: { ready: true } },
    });
    eu.last.succeed('tok', LIFETIME);
    await settle();
    expect(readiness.check()).toEqual({ ready: true, routes: { eu: { ready: true }, pass: { ready: true } } });
    euSource.stop();
  });
});
