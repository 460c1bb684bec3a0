import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/log.js';
import { createDpopClient, dpopGateway, generateDpopKey } from '../../src/token/dpop/index.js';
import { testSource } from '../helpers/token-loop.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { FakeFetcher, FakeLog } from '../helpers/fakes.js';

const T0 = Date.UTC(2026, 0, 1);

function setup() {
  const clock = new FakeClock(T0);
  const fetcher = new FakeFetcher(clock);
  const dpop = createDpopClient({ mode: 'on', key: generateDpopKey(), clock, log: createLogger('silent') });
  const source = testSource({
    label: 'configured',
    credential: { clientId: 'c', clientSecret: 's' },
    fetchToken: fetcher.fetchToken,
    clock,
    random: () => 0,
    refreshRatio: 0.8,
    waitTimeoutMs: 5_000,
    log: new FakeLog(),
    dpop,
  });
  return { clock, fetcher, dpop, source };
}

const claims = (proof: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(proof.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

describe('the held token with DPoP', () => {
  it('hands out one authorization per token, read synchronously: DPoP with proofs by the bound key, Bearer without', async () => {
    const { fetcher, dpop, source } = setup();
    const key = dpop.prover.key();
    fetcher.answer = () => ({ accessToken: 'tok-D', lifetimeMs: 100_000, tokenType: 'DPoP', dpopKey: key });
    const waiting = source.authorize();
    source.start();
    await settle();
    const auth = await waiting;
    expect(source.authorization()).toBe(auth);
    expect(source.authorization()).toBe(source.authorization());
    expect(auth.header).toBe('DPoP tok-D');
    // A rotation: the held token's proofs keep the key it is bound to.
    dpop.prover.replaceKey(generateDpopKey());
    const header = JSON.parse(
      Buffer.from(auth.proof!('GET', '/api/v1/x', dpopGateway('https://gw.example')).split('.')[0]!, 'base64url').toString(),
    ) as {
      jwk: Record<string, string>;
    };
    expect(header.jwk).toEqual(key.jwk);
    expect(claims(auth.proof!('GET', '/api/v1/x', dpopGateway('https://gw.example')))).toMatchObject({
      htm: 'GET',
      htu: 'https://gw.example/api/v1/x',
    });

    fetcher.answer = () => ({ accessToken: 'tok-B', lifetimeMs: 100_000, tokenType: 'Bearer' });
    source.refreshNow('test');
    await settle();
    expect(source.authorization()).toEqual({ token: 'tok-B', header: 'Bearer tok-B' });
    expect(source.current()).toBe('tok-B');
  });

  it('drops the authorization with the token after a gateway 401', async () => {
    const { fetcher, source } = setup();
    fetcher.answer = () => ({ accessToken: 'tok-1', lifetimeMs: 100_000 });
    source.start();
    await settle();
    fetcher.answer = undefined;
    expect(source.invalidate('tok-1')).toBe(true);
    expect(source.authorization()).toBeUndefined();
  });
});
