/**
 * Whatever is written to the token store's prefix, at whatever moment and with whatever time to
 * live, it never holds a proxy longer than it would hold itself: a proxy that needs a token waits
 * for other proxies' fetches one lease length at most, and after a failure record no longer than
 * its own backoff could wait. Proxies sharing one in-memory store on the fake clock.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryTokenStore, MemoryStoreServer } from '../../src/store/memory-backend.js';
import { deriveSlotKey } from '../../src/store/slot-key.js';
import { sealFailure } from '../../src/store/entry.js';
import { CurrentSlot } from '../../src/token/from-store/slot-seed.js';
import { storeSupply } from '../../src/token/from-store/store-supply.js';
import { RETRY_AFTER_CAP_MS } from '../../src/token/parse-response.js';
import { testSource } from '../helpers/token-loop.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeFetcher, FakeLog } from '../helpers/fakes.js';
import { FC } from './budget.js';

const LIFETIME = 100_000;
const FETCH_TIMEOUT = 10_000;
const LEASE_MS = FETCH_TIMEOUT + 1_000;
const HORIZON = 10 * 60_000;
const TICK = 250;
/** Polling and the store's answers: a proxy notices a lease's end within a second of it. */
const SLACK = 1_000;
const PREFIX = 'ticket-auth-proxy:';
const KEY = { description: 'token_url=https://idp.example/token client_id=fleet', keyMaterial: Buffer.from('fleet-secret') };
const fastDerive = (material: Uint8Array, salt: string): Promise<Buffer> =>
  Promise.resolve(createHash('sha256').update(material).update(salt).digest());

type Target = 'entry' | 'lease' | 'failure';
interface Write {
  readonly atMs: number;
  readonly target: Target;
  /** A string, a hash of arbitrary fields, or a failure record sealed under the credential's key for `sealedInMs` from now. */
  readonly value:
    | { kind: 'string'; text: string }
    | { kind: 'hash'; fields: Record<string, string> }
    | { kind: 'sealed'; sealedInMs: number; outcome: string };
  /** Undefined: no time to live. */
  readonly ttlMs: number | undefined;
}

const ttl = fc.option(fc.oneof(fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 5_000, max: 2_000_000_000 })), { nil: undefined });
const garbage = fc.oneof(
  fc.record({ kind: fc.constant('string' as const), text: fc.string() }),
  fc.record({ kind: fc.constant('hash' as const), fields: fc.dictionary(fc.constantFrom('exp', 'fp', 'ct', 'x'), fc.string()) }),
);
const sealed = fc.record({
  kind: fc.constant('sealed' as const),
  sealedInMs: fc.integer({ min: -60_000, max: 2_000_000_000 }),
  outcome: fc.constantFrom('rate_limited', 'server_error', 'rejected', 'timeout'),
});
const write = (value: fc.Arbitrary<Write['value']>): fc.Arbitrary<Write> =>
  fc.record({
    atMs: fc.integer({ min: 0, max: HORIZON }),
    target: fc.constantFrom<Target>('entry', 'lease', 'failure'),
    value,
    ttlMs: ttl,
  });

/** Runs a fleet of `proxies` on one store while `writes` land; returns, per proxy, the longest stretch without a token after its first, and how long its first took. */
async function run(writes: readonly Write[], proxies: number) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const server = new MemoryStoreServer(clock);
  const fetcher = new FakeFetcher(clock);
  fetcher.answer = (call) => ({ accessToken: `tok-${fetcher.calls.indexOf(call)}`, lifetimeMs: LIFETIME });
  const log = new FakeLog();
  const key = await deriveSlotKey({ ...KEY, prefix: PREFIX, derive: fastDerive });
  const keyOf = (target: Target): string => (target === 'entry' ? key.entryKey : target === 'lease' ? key.leaseKey : key.failureKey);
  for (const w of writes) {
    clock.setTimeout(() => {
      const value =
        w.value.kind === 'string'
          ? w.value.text
          : w.value.kind === 'hash'
            ? w.value.fields
            : sealFailure(key, { outcome: w.value.outcome, nextAttemptAtMs: clock.now() + w.value.sealedInMs });
      server.put(keyOf(w.target), value, w.ttlMs);
    }, w.atMs);
  }
  const sources = Array.from({ length: proxies }, (_, i) => {
    const random = (() => {
      let x = i + 1;
      return () => (x = (x * 16807) % 2147483647) / 2147483647;
    })();
    const store = createMemoryTokenStore({ server, clock, random, log, leaseMs: LEASE_MS, derive: fastDerive });
    const namespace = new CurrentSlot(store, clock);
    namespace.use(KEY);
    return testSource({
      label: 'configured',
      credential: { clientId: 'fleet', clientSecret: 'fleet-secret' },
      fetchToken: fetcher.fetchToken,
      clock,
      random,
      refreshRatio: 0.8,
      waitTimeoutMs: 5_000,
      log,
      withStore: (own, backoff) =>
        storeSupply(own, { store, slot: namespace, fetchTimeoutMs: FETCH_TIMEOUT, storeTimeoutMs: 250, backoff, clock, random }),
    });
  });
  const start = clock.now();
  for (const s of sources) s.start();
  const first = sources.map(() => undefined as number | undefined);
  const without = sources.map(() => 0);
  const since = sources.map(() => undefined as number | undefined);
  for (let t = 0; t < HORIZON; t += TICK) {
    await clock.advance(TICK);
    sources.forEach((s, i) => {
      const held = s.current() !== undefined;
      if (held) first[i] ??= clock.now() - start;
      if (first[i] === undefined) return;
      if (held) since[i] = undefined;
      else {
        since[i] ??= clock.now();
        without[i] = Math.max(without[i]!, clock.now() - since[i]! + TICK);
      }
    });
  }
  for (const s of sources) s.stop();
  return { first, without };
}

describe('a token store written by anyone, at any moment', () => {
  it('never holds a proxy for other proxies’ fetches longer than one lease length, nor leaves it without a token afterwards', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(write(garbage), { maxLength: 30 }), async (writes) => {
        const { first, without } = await run(writes, 3);
        for (const f of first) expect(f).toBeLessThanOrEqual(LEASE_MS + SLACK);
        for (const w of without) expect(w).toBe(0);
      }),
      { ...FC, numRuns: 25 },
    );
  });

  it('never holds a proxy after a failure record, whatever its sealed time and time to live, past its own longest backoff', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(write(fc.oneof(garbage, sealed)), { maxLength: 30 }), async (writes) => {
        const { first, without } = await run(writes, 3);
        // The longest its own backoff could wait (a Retry-After at its cap), then one lease length for another proxy's fetch.
        const bound = RETRY_AFTER_CAP_MS + LEASE_MS + SLACK;
        for (const f of first) expect(f).toBeLessThanOrEqual(bound);
        for (const w of without) expect(w).toBeLessThanOrEqual(bound);
      }),
      { ...FC, numRuns: 25 },
    );
  });
});
