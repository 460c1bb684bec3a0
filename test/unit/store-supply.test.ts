import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TokenUnavailableError } from '../../src/core/errors.js';
import { createMemoryTokenStore, MemoryStoreServer } from '../../src/store/memory-backend.js';
import type { SlotSeed, StoreOperation, StoreResult } from '../../src/store/contract.js';
import { TokenFetchError } from '../../src/token/errors.js';
import { storeSupply, RecordedFailureError } from '../../src/token/from-store/store-supply.js';
import { CurrentSlot } from '../../src/token/from-store/slot-seed.js';
import { testSource, type TestSource } from '../helpers/token-loop.js';
import { sealFailure } from '../../src/store/entry.js';
import { deriveSlotKey } from '../../src/store/slot-key.js';
import { BACKOFF_CAP_MS, backoffPolicy, DEFAULT_SCHEDULE } from '../../src/token/refresh-schedule.js';
import { fetchingSupply, SupplyFailure } from '../../src/token/token-supply.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeFetcher, FakeLog } from '../helpers/fakes.js';

const T0 = Date.UTC(2026, 0, 1);
const LIFETIME = 100_000;
const FETCH_TIMEOUT = 10_000;
const STORE_TIMEOUT = 250;
const CREDENTIAL = { clientId: 'fleet-client', clientSecret: 'fleet-secret' };
const KEY: SlotSeed = {
  description: 'token_url=https://idp.example/token client_id=fleet-client',
  keyMaterial: Buffer.from('fleet-secret'),
};

/** scrypt costs tens of milliseconds of real time, which the fake clock does not wait for: a hash stands in. */
const fastDerive = async (material: Uint8Array, salt: string): Promise<Buffer> =>
  createHash('sha256').update(material).update(salt).digest();

interface Proxy {
  source: TestSource;
  namespace: CurrentSlot;
  operations: `${StoreOperation}:${StoreResult}`[];
  counts: { adoptions: number; fetches: number };
}

/**
 * Proxies sharing one in-memory store and one token endpoint, on one fake clock. Each proxy is a
 * token source with its own store client, as separate processes would be.
 */
function fleet(options: { random?: () => number; waitTimeoutMs?: number } = {}) {
  const clock = new FakeClock(T0);
  const server = new MemoryStoreServer(clock);
  const fetcher = new FakeFetcher(clock);
  const log = new FakeLog();
  const random = options.random ?? (() => 0.5);
  const proxies: Proxy[] = [];
  const proxy = (key: SlotSeed = KEY, extra: { derive?: typeof fastDerive; deriveWithinMs?: number } = {}): Proxy => {
    const operations: `${StoreOperation}:${StoreResult}`[] = [];
    const counts = { adoptions: 0, fetches: 0 };
    const store = createMemoryTokenStore({
      server,
      clock,
      random,
      log,
      leaseMs: FETCH_TIMEOUT + 1_000,
      timeoutMs: STORE_TIMEOUT,
      derive: extra.derive ?? fastDerive,
      observer: { onOperation: (op, result) => operations.push(`${op}:${result}`) },
    });
    const namespace = new CurrentSlot(store, clock);
    namespace.use(key);
    const source = testSource({
      label: 'configured',
      credential: CREDENTIAL,
      fetchToken: fetcher.fetchToken,
      clock,
      random,
      refreshRatio: 0.8,
      waitTimeoutMs: options.waitTimeoutMs ?? 5_000,
      log,
      observer: { onAdopt: () => counts.adoptions++, onFetch: () => counts.fetches++ },
      withStore: (own, backoff) =>
        storeSupply(own, {
          store,
          slot: namespace,
          fetchTimeoutMs: FETCH_TIMEOUT,
          storeTimeoutMs: STORE_TIMEOUT,
          backoff,
          clock,
          random,
          deriveWithinMs: extra.deriveWithinMs,
        }),
    });
    const p = { source, namespace, operations, counts };
    proxies.push(p);
    return p;
  };
  const stop = () => proxies.forEach((p) => p.source.stop());
  /** Every fetch from now on answers at once with tok-1, tok-2, ... in order. */
  const numberTokens = () => {
    fetcher.answer = (call) => ({ accessToken: `tok-${fetcher.calls.indexOf(call) + 1}`, lifetimeMs: LIFETIME });
  };
  return { clock, server, fetcher, log, proxy, stop, numberTokens };
}

/** Two proxies started together on numbered tokens, a second later: both hold tok-1. */
async function pairHolding(f: ReturnType<typeof fleet>): Promise<[Proxy, Proxy]> {
  f.numberTokens();
  const pair: [Proxy, Proxy] = [f.proxy(), f.proxy()];
  for (const p of pair) p.source.start();
  await f.clock.advance(1_000);
  return pair;
}

/** The store's entry (the hash of exp, fp and ct), as any client of the store sees it. */
function entryOf(server: MemoryStoreServer) {
  return server.dump().find((k) => k.key.endsWith('}'));
}

describe('a token shared through a store: start', () => {
  it('fetches once for two proxies that start together; the second takes the token without a fetch', async () => {
    const f = fleet();
    const a = f.proxy();
    const b = f.proxy();
    a.source.start();
    b.source.start();
    await f.clock.advance(50);
    expect(f.fetcher.calls).toHaveLength(1);
    f.fetcher.last.succeed('tok-1', LIFETIME);
    await f.clock.advance(400);
    expect(a.source.current()).toBe('tok-1');
    expect(b.source.current()).toBe('tok-1');
    expect(f.fetcher.calls).toHaveLength(1);
    expect(a.counts.fetches + b.counts.fetches).toBe(1);
    expect(a.counts.adoptions + b.counts.adoptions).toBe(1);
    f.stop();
  });

  it('takes a usable entry at start without a fetch, and refreshes it from its issue time, not from when it was taken', async () => {
    const f = fleet({ random: () => 0 });
    const a = f.proxy();
    f.numberTokens();
    a.source.start();
    await f.clock.advance(30_000);
    const b = f.proxy();
    b.source.start();
    await f.clock.advance(10);
    expect(b.source.current()).toBe('tok-1');
    expect(b.counts).toEqual({ adoptions: 1, fetches: 0 });
    // Refresh at 80 % of the lifetime from the issue time (T0): both proxies reach it together, one fetches.
    await f.clock.advance(80_000 - 30_010 - 1);
    expect(f.fetcher.calls).toHaveLength(1);
    await f.clock.advance(2_000);
    expect(f.fetcher.calls).toHaveLength(2);
    expect(f.fetcher.calls[1]!.at - T0).toBe(80_000);
    expect(a.source.current()).toBe('tok-2');
    expect(b.source.current()).toBe('tok-2');
    f.stop();
  });

  it('waits for the lease holder up to the fetch timeout, then tries for the lease again, and fetches once it lapses', async () => {
    const f = fleet();
    const a = f.proxy();
    const b = f.proxy();
    a.source.start();
    await f.clock.advance(10);
    b.source.start();
    // a's fetch never answers: b waits for its entry, then for the lease, which lapses after the fetch timeout and a second.
    await f.clock.advance(FETCH_TIMEOUT);
    expect(f.fetcher.calls).toHaveLength(1);
    await f.clock.advance(FETCH_TIMEOUT + 2_000);
    expect(f.fetcher.calls).toHaveLength(2);
    expect(f.fetcher.last.at - T0).toBeGreaterThanOrEqual(FETCH_TIMEOUT + 1_000);
    const reads = b.operations.filter((o) => o.startsWith('read:')).length;
    // Polled with backoff (about 100 ms doubling to a second), not every few milliseconds.
    expect(reads).toBeGreaterThan(10);
    expect(reads).toBeLessThan(40);
    f.stop();
  });

  it('lets requests wait for another proxy’s fetch only as long as TOKEN_WAIT_TIMEOUT_MS', async () => {
    const f = fleet({ waitTimeoutMs: 2_000 });
    const a = f.proxy();
    const b = f.proxy();
    a.source.start();
    await f.clock.advance(10);
    const waiting = b.source.get().catch((err: unknown) => err);
    await f.clock.advance(2_000);
    expect(await waiting).toBeInstanceOf(TokenUnavailableError);
    f.stop();
  });
});

describe('a token shared through a store: refresh', () => {
  it('takes, at its refresh moment, a token usable at least a second longer instead of fetching, and keeps serving meanwhile', async () => {
    const f = fleet({ random: () => 0 });
    f.numberTokens();
    const a = f.proxy();
    a.source.start();
    await f.clock.advance(5_000);
    // b starts later, holding the same token: both refresh at 80 s from its issue time.
    const b = f.proxy();
    b.source.start();
    await f.clock.advance(74_990);
    expect(b.source.current()).toBe('tok-1');
    await f.clock.advance(1_000);
    expect(f.fetcher.calls).toHaveLength(2);
    expect(a.source.current()).toBe('tok-2');
    expect(b.source.current()).toBe('tok-2');
    expect(b.counts).toEqual({ adoptions: 2, fetches: 0 });
    f.stop();
  });

  it('keeps its own token and fetches through the lease when the stored one is not usable a second longer', async () => {
    const f = fleet({ random: () => 0 });
    f.numberTokens();
    const a = f.proxy();
    a.source.start();
    await f.clock.advance(80_000);
    expect(f.fetcher.calls).toHaveLength(2);
    expect(f.fetcher.last.at - T0).toBe(80_000);
    expect(a.counts).toEqual({ adoptions: 0, fetches: 2 });
    f.stop();
  });

  it('refreshes at the ratio less up to a tenth of the lifetime, not over the wide window of a proxy without a store', async () => {
    for (const r of [0, 0.5, 0.999]) {
      const f = fleet({ random: () => r });
      f.fetcher.answer = () => ({ accessToken: 'tok', lifetimeMs: LIFETIME });
      f.proxy().source.start();
      await f.clock.advance(LIFETIME);
      const refreshAt = f.fetcher.calls[1]!.at - T0;
      expect(Math.abs(refreshAt - (80_000 - r * 10_000))).toBeLessThan(2);
      f.stop();
    }
  });
});

describe('a token shared through a store: failures', () => {
  it('shares a failed fetch: no proxy fetches before the next attempt the lease holder recorded', async () => {
    const f = fleet();
    const a = f.proxy();
    const b = f.proxy();
    a.source.start();
    await f.clock.advance(10);
    b.source.start();
    await f.clock.advance(10);
    f.fetcher.last.fail(new TokenFetchError('rate_limited', 'token endpoint answered 429', { status: 429, retryAfterMs: 60_000 }));
    await f.clock.advance(59_000);
    expect(f.fetcher.calls).toHaveLength(1);
    expect(b.source.lastError).toBeInstanceOf(RecordedFailureError);
    expect(b.source.lastError?.outcome).toBe('rate_limited');
    expect(b.counts.fetches).toBe(0);
    f.fetcher.answer = () => ({ accessToken: 'tok-2', lifetimeMs: LIFETIME });
    await f.clock.advance(10_000);
    expect(f.fetcher.calls).toHaveLength(2);
    expect(a.source.current()).toBe('tok-2');
    expect(b.source.current()).toBe('tok-2');
    f.stop();
  });

  it('settles a failed attempt under the lease only once its failure is recorded and the lease given back', async () => {
    const f = fleet();
    const store = createMemoryTokenStore({
      server: f.server,
      clock: f.clock,
      random: () => 0.5,
      log: f.log,
      leaseMs: FETCH_TIMEOUT + 1_000,
      derive: fastDerive,
    });
    const namespace = new CurrentSlot(store, f.clock);
    namespace.use(KEY);
    const backoff = backoffPolicy(DEFAULT_SCHEDULE, () => 0.5);
    const own = fetchingSupply(f.fetcher.fetchToken, { clock: f.clock, backoff, schedule: DEFAULT_SCHEDULE });
    const supply = storeSupply(own, {
      store,
      slot: namespace,
      fetchTimeoutMs: FETCH_TIMEOUT,
      storeTimeoutMs: STORE_TIMEOUT,
      backoff,
      clock: f.clock,
      random: () => 0.5,
    });
    f.fetcher.answer = () => new TokenFetchError('rate_limited', 'token endpoint answered 429', { status: 429, retryAfterMs: 60_000 });
    const attempt = supply.obtain({
      credential: CREDENTIAL,
      held: undefined,
      failures: 0,
      signal: new AbortController().signal,
    });
    const failure = await attempt.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(SupplyFailure);
    expect((failure as SupplyFailure).nextAttemptAtMs).toBe(f.clock.now() + 60_000);
    // When the attempt settles, the store holds the failure record and no lease: nothing is left for another object to finish.
    const keys = f.server.dump().map((k) => k.key);
    expect(keys.some((k) => k.endsWith(':lease'))).toBe(false);
    expect(keys.some((k) => k.endsWith(':failure'))).toBe(true);
  });

  it('honours a failure record sealed for a day no longer than its own backoff could wait, counts it, and then fetches', async () => {
    const f = fleet();
    const a = f.proxy();
    const key = await deriveSlotKey({ ...KEY, prefix: 'ticket-auth-proxy:', derive: fastDerive });
    // Sealed under the credential's key (a holder of it), for a day, with a day to live.
    f.server.put(key.failureKey, sealFailure(key, { outcome: 'timeout', nextAttemptAtMs: f.clock.now() + 86_400_000 }), 86_400_000);
    a.source.start();
    await f.clock.advance(BACKOFF_CAP_MS - 1_000);
    expect(f.fetcher.calls).toHaveLength(0);
    expect(a.operations).not.toContain('lease:ok');
    f.numberTokens();
    await f.clock.advance(2_000);
    expect(f.fetcher.calls).toHaveLength(1);
    expect(a.source.current()).toBe('tok-1');
    expect(f.log.lines.filter((l) => (l.obj as { kind?: string }).kind === 'failure_too_long')).toHaveLength(1);
    f.stop();
  });

  it('cuts a stale failure record replayed with twenty days to live to the longest wait its backoff could ask for, and counts it', async () => {
    const f = fleet();
    const [a] = await pairHolding(f);
    const key = await deriveSlotKey({ ...KEY, prefix: 'ticket-auth-proxy:', derive: fastDerive });
    // A record a holder of the credential sealed once, replayed long after its time with twenty days to live.
    const days20 = 20 * 86_400_000;
    f.server.put(key.failureKey, sealFailure(key, { outcome: 'rate_limited', nextAttemptAtMs: f.clock.now() - 60_000 }), days20);
    const ttl = () => f.server.dump().find((k) => k.key === key.failureKey)?.ttlMs;
    // A third proxy starts: it takes the stored token, and sees the record's time to live.
    const c = f.proxy();
    c.source.start();
    await f.clock.advance(1_000);
    expect(c.source.current()).toBe('tok-1');
    expect(c.counts.adoptions).toBe(1);
    // A Retry-After of at most 5 minutes is the longest wait its backoff could ask for after a throttling endpoint.
    expect(ttl()).toBeLessThanOrEqual(300_000);
    expect(ttl()).toBeGreaterThan(290_000);
    expect(f.log.lines.filter((l) => (l.obj as { kind?: string }).kind === 'failure_too_long')).toHaveLength(1);
    expect(a.source.current()).toBe('tok-1');
    f.stop();
  });

  it('passes by a failure record without a time to live, sealed or not, and counts it: no proxy writes one', async () => {
    const f = fleet();
    f.numberTokens();
    const key = await deriveSlotKey({ ...KEY, prefix: 'ticket-auth-proxy:', derive: fastDerive });
    for (const value of ['garbage', sealFailure(key, { outcome: 'timeout', nextAttemptAtMs: f.clock.now() + 86_400_000 })]) {
      f.server.put(key.failureKey, value);
      const a = f.proxy();
      a.source.start();
      await f.clock.advance(1_000);
      expect(a.source.current()).toBeDefined();
    }
    expect(f.fetcher.calls.length).toBeGreaterThan(0);
    // Each proxy counted the one it met.
    expect(f.log.lines.filter((l) => (l.obj as { kind?: string }).kind === 'invalid_failure')).toHaveLength(2);
    f.stop();
  });

  it('lets a throttling token endpoint see one attempt per backoff step from a fleet, not one per proxy', async () => {
    const f = fleet({ random: Math.random });
    const proxies = Array.from({ length: 8 }, () => f.proxy());
    f.fetcher.answer = () => new TokenFetchError('server_error', 'token endpoint answered 503', { status: 503 });
    for (const p of proxies) p.source.start();
    await f.clock.advance(120_000);
    const starts = f.fetcher.calls.map((c) => c.at);
    // A fleet without a store: about eight attempts a step. With it: one at a time, each after the previous step.
    expect(starts.length).toBeGreaterThan(3);
    expect(starts.length).toBeLessThan(20);
    expect(new Set(starts).size).toBe(starts.length);
    f.stop();
  });
});

describe('a token shared through a store: a gateway 401', () => {
  it('costs one fetch for a fleet that meets the same rejection: one proxy deletes and fetches, the others take its token', async () => {
    const f = fleet();
    f.numberTokens();
    const proxies = Array.from({ length: 4 }, () => f.proxy());
    for (const p of proxies) p.source.start();
    await f.clock.advance(2_000);
    expect(f.fetcher.calls).toHaveLength(1);
    for (const p of proxies) expect(p.source.invalidate('tok-1')).toBe(true);
    await f.clock.advance(2_000);
    expect(f.fetcher.calls).toHaveLength(2);
    for (const p of proxies) expect(p.source.current()).toBe('tok-2');
    f.stop();
  });

  it('deletes the entry only if it holds the rejected token: a newer one another proxy wrote stays', async () => {
    const f = fleet();
    const [a, b] = await pairHolding(f);
    a.source.invalidate('tok-1');
    await f.clock.advance(1_000);
    const fp = entryOf(f.server)!.value as Record<string, string>;
    // b meets its own 401 for tok-1 later: the entry holds tok-2, which b takes.
    b.source.invalidate('tok-1');
    await f.clock.advance(1_000);
    expect((entryOf(f.server)!.value as Record<string, string>).fp).toBe(fp.fp);
    expect(b.source.current()).toBe('tok-2');
    expect(f.fetcher.calls).toHaveLength(2);
    f.stop();
  });

  it('never takes a token it has seen rejected, even when the store still holds it', async () => {
    const f = fleet();
    f.numberTokens();
    const a = f.proxy();
    a.source.start();
    await f.clock.advance(1_000);
    // A replica after a failover: the delete is refused, the rejected token stays in the store.
    f.server.fault = 'readonly';
    a.source.invalidate('tok-1');
    await f.clock.advance(1_000);
    expect(a.source.current()).toBe('tok-2');
    expect(a.counts).toEqual({ adoptions: 0, fetches: 2 });
    f.stop();
  });
});

describe('a token shared through a store: a store that cannot be used', () => {
  it('delays the start by one store timeout when the store does not answer, then fetches alone', async () => {
    const f = fleet();
    f.server.fault = 'hang';
    const a = f.proxy();
    a.source.start();
    await f.clock.advance(STORE_TIMEOUT - 1);
    expect(f.fetcher.calls).toHaveLength(0);
    await f.clock.advance(1);
    expect(f.fetcher.calls).toHaveLength(1);
    f.fetcher.last.succeed('tok-1', LIFETIME);
    await f.clock.advance(10);
    // Down now, until a background check finds it: the next need of the store costs no wait.
    a.source.invalidate('tok-1');
    await f.clock.advance(0);
    expect(f.fetcher.calls).toHaveLength(2);
    expect(a.operations).toEqual(['read:timeout', 'delete:error', 'read:error']);
    f.stop();
  });

  it('refreshes a token fetched alone on the wide schedule of a proxy without a store', async () => {
    const f = fleet({ random: () => 0.5 });
    f.server.fault = 'unreachable';
    f.fetcher.answer = () => ({ accessToken: 'tok', lifetimeMs: LIFETIME });
    f.proxy().source.start();
    await f.clock.advance(LIFETIME);
    // Between half the ratio and the ratio: 0.8 * (1 - 0.5 / 2) of the lifetime.
    expect(f.fetcher.calls[1]!.at - T0).toBe(60_000);
    f.stop();
  });

  it('takes no entry that does not decrypt: it is a miss, never served, and the next fetch replaces it', async () => {
    const f = fleet();
    f.numberTokens();
    const a = f.proxy();
    a.source.start();
    await f.clock.advance(1_000);
    const entry = entryOf(f.server)!;
    f.server.put(entry.key, { exp: String(T0 + 90_000), fp: 'ab', ct: 'Z2FyYmFnZQ==' }, 60_000);
    const b = f.proxy();
    b.source.start();
    await f.clock.advance(1_000);
    expect(b.source.current()).toBe('tok-2');
    expect(b.operations).toContain('read:invalid');
    expect((entryOf(f.server)!.value as Record<string, string>).ct).not.toBe('Z2FyYmFnZQ==');
    f.stop();
  });

  it('spends one store timeout in all before it fetches alone when every answer of the store comes just in time', async () => {
    const f = fleet();
    f.numberTokens();
    // Each answer at 90 % of the timeout: the read and the lease together would take 180 %.
    f.server.latencyMs = STORE_TIMEOUT * 0.9;
    const a = f.proxy();
    a.source.start();
    await f.clock.advance(STORE_TIMEOUT + 1);
    expect(a.source.current()).toBe('tok-1');
    expect(f.fetcher.calls).toHaveLength(1);
    // The lease the attempt took after it had gone alone is released once its token is written.
    await f.clock.advance(STORE_TIMEOUT * 3);
    expect(f.server.dump().filter((k) => k.key.endsWith(':lease'))).toEqual([]);
    expect(entryOf(f.server)).toBeDefined();
    f.stop();
  });

  it('writes what it fetched alone under a lease that came late, so a proxy that found that lease taken takes the token', async () => {
    const f = fleet();
    f.numberTokens();
    // A slow moment of the store: A's read and lease take 120 % of the timeout, and A fetches alone.
    f.server.latencyMs = STORE_TIMEOUT * 0.6;
    const a = f.proxy();
    a.source.start();
    await f.clock.advance(STORE_TIMEOUT + 10);
    expect(a.source.current()).toBe('tok-1');
    // The store is fast again; B comes while A's lease, taken late, is still held.
    f.server.latencyMs = 10;
    const b = f.proxy();
    b.source.start();
    await f.clock.advance(1_000);
    expect(b.source.current()).toBe('tok-1');
    expect(b.counts).toEqual({ adoptions: 1, fetches: 0 });
    expect(f.fetcher.calls).toHaveLength(1);
    f.stop();
  });

  it("does not spend the store's budget on the configured credential's key derivation, however long it takes", async () => {
    const f = fleet();
    f.numberTokens();
    // scrypt on a busy processor: twice the store timeout.
    const slowDerive = (material: Uint8Array, salt: string) =>
      new Promise<Buffer>((resolve) => f.clock.setTimeout(() => void fastDerive(material, salt).then(resolve), STORE_TIMEOUT * 2));
    const a = f.proxy(KEY, { derive: slowDerive });
    a.source.start();
    await f.clock.advance(STORE_TIMEOUT * 3);
    expect(a.source.current()).toBe('tok-1');
    // Read, leased, written: shared, not fetched alone.
    expect(a.operations).toEqual(expect.arrayContaining(['read:miss', 'lease:ok', 'write:ok']));
    expect(entryOf(f.server)).toBeDefined();
    f.stop();
  });

  it('fetches a pass-through credential alone when its key is not derived within the wait it is given', async () => {
    const f = fleet();
    let release: () => void = () => {};
    const slowDerive = (material: Uint8Array, salt: string) =>
      new Promise<Buffer>((resolve) => {
        release = () => resolve(createHash('sha256').update(material).update(salt).digest());
      });
    const a = f.proxy(KEY, { derive: slowDerive, deriveWithinMs: STORE_TIMEOUT });
    a.source.start();
    await f.clock.advance(STORE_TIMEOUT);
    expect(f.fetcher.calls).toHaveLength(1);
    expect(a.operations).toEqual([]);
    release();
    f.stop();
  });
});

describe('a token shared through a store: namespaces', () => {
  it('reads nothing a proxy with another secret wrote, and fetches for itself', async () => {
    const f = fleet();
    f.numberTokens();
    const a = f.proxy();
    a.source.start();
    await f.clock.advance(1_000);
    const rotated = f.proxy({ ...KEY, keyMaterial: Buffer.from('fleet-secret-rotated') });
    rotated.source.start();
    await f.clock.advance(1_000);
    expect(rotated.source.current()).toBe('tok-2');
    expect(rotated.counts).toEqual({ adoptions: 0, fetches: 1 });
    expect(f.server.dump().filter((k) => k.key.endsWith('}'))).toHaveLength(2);
    f.stop();
  });

  it('fetches through the lease of the new namespace when the secret changes, and a second proxy that rotates takes that token', async () => {
    const f = fleet();
    const [a, b] = await pairHolding(f);
    const next = { ...KEY, keyMaterial: Buffer.from('fleet-secret-2') };
    for (const p of [a, b]) {
      expect(p.namespace.use(next)).toBe(true);
      p.source.setCredential({ ...CREDENTIAL, clientSecret: 'fleet-secret-2' });
      await f.clock.advance(1_000);
    }
    expect(f.fetcher.calls).toHaveLength(2);
    expect(f.fetcher.last.credential.clientSecret).toBe('fleet-secret-2');
    expect(b.source.current()).toBe('tok-2');
    expect(a.namespace.use(next)).toBe(false);
    f.stop();
  });
});

describe('a token shared through a store: clocks that disagree', () => {
  it('schedules the refresh of a token taken from the store by durations, whatever the writer’s clock said', async () => {
    const f = fleet({ random: () => 0 });
    // A writer whose clock runs 30 s ahead of the reader's: its times mean nothing here.
    const ahead = {
      now: () => f.clock.now() + 30_000,
      setTimeout: f.clock.setTimeout.bind(f.clock),
      clearTimeout: f.clock.clearTimeout.bind(f.clock),
    };
    const writer = await createMemoryTokenStore({
      server: f.server,
      clock: ahead,
      random: Math.random,
      log: f.log,
      leaseMs: 11_000,
      derive: fastDerive,
    }).slot(KEY);
    const issued = ahead.now();
    await writer.write({
      accessToken: 'tok-ahead',
      tokenType: 'Bearer',
      issuedAtMs: issued,
      expiresAtMs: issued + LIFETIME,
      usableUntilMs: issued + 90_000,
    });
    await f.clock.advance(10_000);
    const reader = f.proxy();
    reader.source.start();
    await f.clock.advance(10);
    expect(reader.source.current()).toBe('tok-ahead');
    expect(reader.source.state.expiresAtMs - T0).toBe(LIFETIME);
    // Issued at T0 by the store's count: refreshed at 80 % of the lifetime from then, not 30 s later.
    f.fetcher.answer = () => ({ accessToken: 'tok-next', lifetimeMs: LIFETIME });
    await f.clock.advance(80_000 - 10_010);
    expect(f.fetcher.calls.map((c) => c.at - T0)).toEqual([80_000]);
    f.stop();
  });
});
