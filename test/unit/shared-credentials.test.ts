import { describe, expect, it } from 'vitest';
import { createMemoryTokenStore, MemoryStoreServer } from '../../src/store/memory-backend.js';
import { clientSecretBasic } from '../../src/token/client-auth/client-secret-basic.js';
import { DERIVATIONS_PER_MINUTE, sharePassthrough } from '../../src/token/from-store/shared-credentials.js';
import { backoffPolicy, DEFAULT_SCHEDULE } from '../../src/token/refresh-schedule.js';
import type { SuppliedToken, TokenSupply } from '../../src/token/token-supply.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const SETTINGS = {
  tokenUrl: 'https://idp.example/oauth2/token',
  issuerUrl: undefined,
  tokenScope: undefined,
  tokenParams: [],
  dpop: 'off' as const,
  tokenFetchTimeoutMs: 10_000,
  dpopKeyFile: undefined,
};

/** This proxy's own fetch, answering at once and counting. */
function ownFetch(clock: FakeClock): TokenSupply & { fetches: number } {
  const own = {
    fetches: 0,
    rejected() {},
    obtain(): Promise<SuppliedToken> {
      own.fetches++;
      const now = clock.now();
      return Promise.resolve({
        grant: { accessToken: `tok-${own.fetches}`, lifetimeMs: 100_000 },
        issuedAtMs: now,
        lifetimeMs: 100_000,
        expiresAtMs: now + 100_000,
        usableUntilMs: now + 90_000,
        fetchMs: 0,
        schedule: DEFAULT_SCHEDULE,
      });
    },
  };
  return own;
}

/** Pass-through credentials shared through an in-memory store whose keys `derive` makes, on a fake clock. */
function sharing(derive: (material: Uint8Array) => Promise<Buffer>) {
  const clock = new FakeClock();
  const store = createMemoryTokenStore({
    server: new MemoryStoreServer(clock),
    clock,
    random: () => 0.5,
    log: new FakeLog(),
    leaseMs: 11_000,
    derive,
  });
  const supplyFor = sharePassthrough({
    store,
    settings: SETTINGS,
    storeTimeoutMs: 250,
    dpop: undefined,
    keyFile: () => undefined,
    clock,
    random: () => 0.5,
    log: new FakeLog(),
    method: clientSecretBasic,
  })!;
  const backoff = backoffPolicy(DEFAULT_SCHEDULE, () => 0.5);
  const own = ownFetch(clock);
  const credential = (i: number) => ({ clientId: `caller-${i}`, clientSecret: `s-${i}` });
  return {
    clock,
    own,
    /** The supply of caller `i`'s credential. */
    supply: (i: number) => supplyFor(credential(i), own, backoff),
    /** An attempt of caller `i`'s. */
    request: (i: number) => ({
      credential: credential(i),
      held: undefined,
      failures: 0,
      signal: new AbortController().signal,
    }),
  };
}

describe('pass-through credentials sharing through a store', () => {
  it('derives at most ten keys a minute for a burst of new credentials, fetching the rest alone, and derives again a minute later', async () => {
    const derived: string[] = [];
    const { clock, own, supply, request } = sharing((material) => {
      derived.push(Buffer.from(material).toString());
      return Promise.resolve(Buffer.alloc(32, derived.length));
    });
    const attempt = (i: number) => supply(i).obtain(request(i));
    const tokens = await Promise.all(Array.from({ length: 30 }, (_, i) => attempt(i)));
    await settle();
    expect(tokens).toHaveLength(30);
    expect(derived).toHaveLength(DERIVATIONS_PER_MINUTE);
    expect(own.fetches).toBe(30);
    await clock.advance(60_000);
    await attempt(30);
    await settle();
    expect(derived).toHaveLength(DERIVATIONS_PER_MINUTE + 1);
  });

  it('waits for a key derived at a later attempt no longer than the store timeout either, then fetches alone', async () => {
    let started = 0;
    // A derivation that never ends: scrypt's thread pool taken by something else.
    const { clock, own, supply, request } = sharing(() => {
      started++;
      return new Promise<Buffer>(() => {});
    });
    // A minute's derivations go to ten other credentials; this one's first attempt fetches alone.
    const others = Array.from({ length: DERIVATIONS_PER_MINUTE }, (_, i) => supply(i).obtain(request(i)));
    const late = supply(99);
    await late.obtain(request(99));
    expect(own.fetches).toBe(1);
    await clock.advance(250);
    await Promise.all(others);
    expect(own.fetches).toBe(DERIVATIONS_PER_MINUTE + 1);
    // A minute on, its refresh starts its derivation, which never ends: the attempt waits the store
    // timeout for it, then fetches alone.
    await clock.advance(60_000);
    const fetchesBefore = own.fetches;
    let token: SuppliedToken | undefined;
    void late.obtain(request(99)).then((t) => (token = t));
    await clock.advance(249);
    expect(token).toBeUndefined();
    await clock.advance(1);
    expect(token?.grant.accessToken).toBe(`tok-${fetchesBefore + 1}`);
    expect(started).toBeGreaterThan(0);
  });
});
