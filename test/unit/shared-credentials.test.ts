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
  tokenWaitTimeoutMs: 5_000,
  dpopKeyFile: undefined,
};
const STORE_TIMEOUT_MS = 250;

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
  const server = new MemoryStoreServer(clock);
  const store = createMemoryTokenStore({
    server,
    clock,
    random: () => 0.5,
    log: new FakeLog(),
    leaseMs: 11_000,
    derive,
  });
  const supplyFor = sharePassthrough({
    store,
    settings: SETTINGS,
    storeTimeoutMs: STORE_TIMEOUT_MS,
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
    server,
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

  it('waits for a key derived at a later attempt no longer than TOKEN_WAIT_TIMEOUT_MS either, then fetches alone', async () => {
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
    await clock.advance(SETTINGS.tokenWaitTimeoutMs);
    await Promise.all(others);
    expect(own.fetches).toBe(DERIVATIONS_PER_MINUTE + 1);
    // A minute on, its refresh starts its derivation, which never ends: the attempt waits as long
    // as a caller waits for a token, then fetches alone.
    await clock.advance(60_000);
    const fetchesBefore = own.fetches;
    let token: SuppliedToken | undefined;
    void late.obtain(request(99)).then((t) => (token = t));
    await clock.advance(SETTINGS.tokenWaitTimeoutMs - 1);
    expect(token).toBeUndefined();
    await clock.advance(1);
    expect(token?.grant.accessToken).toBe(`tok-${fetchesBefore + 1}`);
    expect(started).toBeGreaterThan(0);
  });

  it('takes the token another proxy shared once a derivation far longer than the store timeout ends, its budget starting after it', async () => {
    // One derivation on a tenth of a core: seconds, where the store answers at once.
    let finish: (key: Buffer) => void = () => {};
    const first = sharing(() => new Promise<Buffer>((resolve) => (finish = resolve)));
    // Another proxy of the same store shared this credential's token first.
    const other = sharing(() => Promise.resolve(Buffer.alloc(32, 7)));
    await other.supply(1).obtain(other.request(1));
    await settle();
    for (const { key, value, ttlMs } of other.server.dump()) first.server.put(key, value, ttlMs);
    let token: SuppliedToken | undefined;
    void first
      .supply(1)
      .obtain(first.request(1))
      .then((t) => (token = t));
    await first.clock.advance(STORE_TIMEOUT_MS * 8);
    expect(token).toBeUndefined();
    finish(Buffer.alloc(32, 7));
    await first.clock.advance(0);
    expect(token?.grant.accessToken).toBe('tok-1');
    expect(first.own.fetches).toBe(0);
  });
});
