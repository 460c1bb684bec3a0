/**
 * The token store's contract, one suite run against every implementation: the in-memory store on
 * the fake clock (test/unit/memory-store.test.ts) and the Redis one against a real redis-server,
 * standalone with an ACL user, over TLS and as a cluster (test/integration/redis-store.test.ts).
 * What one proxy writes, another with the same credential reads; a late writer never overwrites a
 * fresher token; one lease at a time; delete only the rejected token; a shared failure; garbage
 * never served; nothing readable without the credential.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type {
  AnomalyKind,
  SlotSeed,
  StoredToken,
  StoreOperation,
  StoreResult,
  TokenStore,
  TokenStoreObserver,
} from '../../src/store/contract.js';
import { STORE_VALUE_MAX_BYTES } from '../../src/store/scripts.js';

/** A raw key of the store, as a client without the credential reads it. */
export interface RawKey {
  key: string;
  value: string | Record<string, string>;
  /** Milliseconds left, -1 without a time to live. */
  ttlMs: number;
}

export interface StoreHarness {
  /** Every key of this test begins with it (a new one for each test). */
  readonly prefix: string;
  /** A store as one more proxy opens it, on the same server, with this test's prefix. */
  open(options?: { fetchTimeoutMs?: number; observer?: TokenStoreObserver }): Promise<TokenStore>;
  /** Now, by the clock the store runs on. */
  now(): number;
  /** Lets store time pass until `check` holds (the fake clock moves; a real server's clock runs); fails after `withinMs`. */
  until(check: () => Promise<boolean>, withinMs: number): Promise<void>;
  /** Every key under this test's prefix. */
  dump(): Promise<RawKey[]>;
  /** Writes a key as any client could: a string or a hash, with or without a time to live (ms). */
  put(key: string, value: string | Record<string, string>, ttlMs?: number): Promise<void>;
  /** Sets a key's time to live (ms). */
  expire(key: string, ttlMs: number): Promise<void>;
  /**
   * Writes `bytes` bytes of one letter into a field of the hash at `key` (the rest of the hash
   * kept), or as the whole string value without `field`; then gives the key `ttlMs` to live when
   * given. A real server makes the value itself: 100 MB need not cross the network to be written.
   */
  fill(key: string, bytes: number, options?: { field?: string; ttlMs?: number }): Promise<void>;
  /** The bytes the server has sent its clients so far, where it counts them (a real server). */
  bytesSent?(): Promise<number>;
  /**
   * Runs `during` and gives back what the store's scripts ran meanwhile, each command as its name
   * and arguments (as `MONITOR` shows them on a real server); `commands` is undefined where
   * nothing shows them.
   */
  scriptCommands(during: () => Promise<unknown>): Promise<{ value: unknown; commands: string[][] | undefined }>;
}

const MB = 1024 * 1024;

const DESCRIPTION = 'token_url=https://idp.example.com/oauth2/token client_id=ticket-client-7 method=client_secret_post scope=tickets.read';
const SECRET = 'the-client-secret-of-ticket-client-7';
const CREDENTIAL: SlotSeed = { description: DESCRIPTION, keyMaterial: Buffer.from(SECRET) };

let serial = 0;
/** A token issued now, usable for `usableMs` (its expiry a second later). */
function tokenAt(now: number, usableMs: number, name = `tok-${++serial}-${Math.random().toString(36).slice(2)}`): StoredToken {
  return {
    accessToken: `eyJhbGciOiJSUzI1NiJ9.${name}.c2ln`,
    tokenType: 'Bearer',
    issuedAtMs: now,
    expiresAtMs: now + usableMs + 1_000,
    usableUntilMs: now + usableMs,
  };
}

/** Runs the contract against the stores `harness` makes; `harness` is called before each test. */
export function storeContract(name: string, makeHarness: () => Promise<StoreHarness>): void {
  describe(`the token store contract: ${name}`, () => {
    let h: StoreHarness;
    beforeEach(async () => {
      h = await makeHarness();
    });

    it('reads a miss from an empty store', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      expect(await cred.read()).toEqual({ kind: 'miss', invalid: false, failure: undefined });
    });

    it('reads back a written token whole, with its remaining life, from another proxy holding the same credential', async () => {
      const writer = await (await h.open()).slot(CREDENTIAL);
      const reader = await (await h.open()).slot({ ...CREDENTIAL, keyMaterial: Buffer.from(SECRET) });
      const token = { ...tokenAt(h.now(), 60_000), tokenType: 'DPoP' as const };
      expect(await writer.write(token)).toEqual({ kind: 'written' });
      const before = h.now();
      const read = await reader.read();
      expect(read).toMatchObject({ kind: 'hit', token, failure: undefined });
      const { remainingMs } = read as { remainingMs: number };
      expect(remainingMs).toBeGreaterThan(55_000);
      expect(remainingMs).toBeLessThanOrEqual(token.usableUntilMs - before);
    });

    it('keeps a token usable longer than the one a late writer brings, and takes one usable longer', async () => {
      const store = await h.open();
      const cred = await store.slot(CREDENTIAL);
      const fresh = tokenAt(h.now(), 60_000);
      const late = tokenAt(h.now(), 30_000);
      const fresher = tokenAt(h.now(), 90_000);
      expect(await cred.write(fresh)).toEqual({ kind: 'written' });
      expect(await cred.write(late)).toEqual({ kind: 'kept' });
      expect(await cred.write(fresh)).toEqual({ kind: 'kept' });
      expect(await cred.read()).toMatchObject({ kind: 'hit', token: fresh });
      expect(await cred.write(fresher)).toEqual({ kind: 'written' });
      expect(await cred.read()).toMatchObject({ kind: 'hit', token: fresher });
    });

    it("ends an entry's time to live at its last usable moment, and then reads a miss", async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      const token = tokenAt(h.now(), 400);
      await cred.write(token);
      const [entry] = (await h.dump()).filter((k) => k.key.endsWith('}'));
      expect(entry!.ttlMs).toBeGreaterThan(0);
      expect(entry!.ttlMs).toBeLessThanOrEqual(400);
      await h.until(async () => (await cred.read()).kind === 'miss', 2_000);
      expect(h.now()).toBeGreaterThanOrEqual(token.usableUntilMs - 50);
      // The store drops it too, a moment later at most (its time to live counts from the write's arrival).
      await h.until(async () => (await h.dump()).filter((k) => k.key.endsWith('}')).length === 0, 500);
    });

    it('bounds the remaining life by the time to live the store counts, whatever the writer said', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      await cred.write(tokenAt(h.now(), 60_000));
      const [entry] = (await h.dump()).filter((k) => k.key.endsWith('}'));
      await h.expire(entry!.key, 5_000);
      const read = await cred.read();
      expect(read.kind).toBe('hit');
      expect((read as { remainingMs: number }).remainingMs).toBeLessThanOrEqual(5_000);
    });

    it('keeps credentials apart: another description or rotated key material reads nothing and writes beside', async () => {
      const store = await h.open();
      const cred = await store.slot(CREDENTIAL);
      const token = tokenAt(h.now(), 60_000);
      await cred.write(token);
      const otherScope = await store.slot({ ...CREDENTIAL, description: DESCRIPTION.replace('tickets.read', 'tickets.write') });
      const rotated = await store.slot({ ...CREDENTIAL, keyMaterial: Buffer.from(`${SECRET}-rotated`) });
      expect(await otherScope.read()).toMatchObject({ kind: 'miss', invalid: false });
      expect(await rotated.read()).toMatchObject({ kind: 'miss', invalid: false });
      expect(await rotated.write(tokenAt(h.now(), 30_000))).toEqual({ kind: 'written' });
      expect(await cred.read()).toMatchObject({ kind: 'hit', token });
      expect((await h.dump()).filter((k) => k.key.endsWith('}'))).toHaveLength(2);
    });

    it('gives the lease to one proxy at a time, and to the next once released', async () => {
      const a = await (await h.open()).slot(CREDENTIAL);
      const b = await (await h.open()).slot(CREDENTIAL);
      const taking = h.now();
      const taken = await a.takeLease();
      expect(taken.kind).toBe('acquired');
      expect(await b.takeLease()).toEqual({ kind: 'taken' });
      expect(await a.takeLease()).toEqual({ kind: 'taken' });
      const lease = (taken as Extract<typeof taken, { kind: 'acquired' }>).lease;
      // The fetch timeout and a second, from when it was taken.
      expect(lease.expiresAtMs - taking).toBeGreaterThanOrEqual(11_000);
      expect(await lease.release()).toEqual({ kind: 'released' });
      expect((await b.takeLease()).kind).toBe('acquired');
    });

    it("lets a lease lapse after the fetch timeout and a second, and never releases another proxy's lease", async () => {
      const a = await (await h.open({ fetchTimeoutMs: 1 })).slot(CREDENTIAL);
      const b = await (await h.open({ fetchTimeoutMs: 1 })).slot(CREDENTIAL);
      const first = await a.takeLease();
      expect(first.kind).toBe('acquired');
      const [lease] = (await h.dump()).filter((k) => k.key.endsWith(':lease'));
      expect(lease!.ttlMs).toBeGreaterThan(0);
      expect(lease!.ttlMs).toBeLessThanOrEqual(1_001);
      await h.until(async () => (await b.takeLease()).kind === 'acquired', 3_000);
      expect(await (first as Extract<typeof first, { kind: 'acquired' }>).lease.release()).toEqual({ kind: 'lapsed' });
      expect(await a.takeLease()).toEqual({ kind: 'taken' });
    });

    it('gives a lease left without a time to live one, so it cannot hold the fleet off for ever', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      const first = await cred.takeLease();
      const [lease] = (await h.dump()).filter((k) => k.key.endsWith(':lease'));
      await (first as Extract<typeof first, { kind: 'acquired' }>).lease.release();
      await h.put(lease!.key, 'left-by-hand');
      expect(await cred.takeLease()).toEqual({ kind: 'taken' });
      const [stray] = (await h.dump()).filter((k) => k.key.endsWith(':lease'));
      expect(stray!.value).toBe('left-by-hand');
      expect(stray!.ttlMs).toBeGreaterThan(0);
      expect(stray!.ttlMs).toBeLessThanOrEqual(11_000);
    });

    it('deletes the entry only if it holds the rejected token', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      const current = tokenAt(h.now(), 60_000);
      await cred.write(current);
      expect(await cred.deleteIfSame(tokenAt(h.now(), 60_000).accessToken)).toEqual({ kind: 'kept' });
      expect(await cred.read()).toMatchObject({ kind: 'hit', token: current });
      expect(await cred.deleteIfSame(current.accessToken)).toEqual({ kind: 'deleted' });
      expect(await cred.read()).toMatchObject({ kind: 'miss', invalid: false });
      expect(await cred.deleteIfSame(current.accessToken)).toEqual({ kind: 'kept' });
    });

    it("shares a failed fetch's next attempt until that moment, or until a token is written", async () => {
      const a = await (await h.open()).slot(CREDENTIAL);
      const b = await (await h.open()).slot(CREDENTIAL);
      const at = h.now() + 30_000;
      const recording = h.now();
      expect(await a.recordFailure({ nextAttemptAtMs: at, outcome: 'rate_limited' })).toEqual({ kind: 'recorded' });
      // The store counts the record's time to live from when the write reached it.
      const writeTook = h.now() - recording;
      const reading = h.now();
      const read = await b.read();
      const readTook = h.now() - reading;
      expect(read).toMatchObject({ kind: 'miss', failure: { outcome: 'rate_limited' } });
      const { nextAttemptAtMs } = (read as { failure: { nextAttemptAtMs: number } }).failure;
      // Never sooner than recorded, but for the read's own way (the record's time to live is
      // counted from when the read was sent).
      expect(nextAttemptAtMs).toBeGreaterThanOrEqual(at - readTook - 1);
      // Never later than recorded, however slow the read's answer: only the write's own way to the
      // store (and the record's time to live, rounded up to a millisecond) can move it.
      expect(nextAttemptAtMs).toBeLessThanOrEqual(at + writeTook + 1);
      await b.write(tokenAt(h.now(), 60_000));
      expect(await a.read()).toMatchObject({ kind: 'hit', failure: undefined });
      await a.recordFailure({ nextAttemptAtMs: h.now() + 1_000, outcome: 'server_error' });
      expect(await a.read()).toMatchObject({ kind: 'hit', failure: { outcome: 'server_error' } });
      await h.until(async () => {
        const later = await a.read();
        return later.kind === 'hit' && later.failure === undefined;
      }, 3_000);
    });

    it('ignores a failure record this credential did not seal', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      await cred.recordFailure({ nextAttemptAtMs: h.now() + 60_000, outcome: 'rate_limited' });
      const [record] = (await h.dump()).filter((k) => k.key.endsWith(':failure'));
      await h.put(record!.key, 'rate_limited', 60_000);
      expect(await cred.read()).toEqual({ kind: 'miss', invalid: false, failure: undefined });
    });

    it('ignores a failure record longer than any proxy writes, and reads it as no record', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      await cred.recordFailure({ nextAttemptAtMs: h.now() + 60_000, outcome: 'rate_limited' });
      const [record] = (await h.dump()).filter((k) => k.key.endsWith(':failure'));
      await h.put(record!.key, 'A'.repeat(STORE_VALUE_MAX_BYTES + 1), 60_000);
      expect(await cred.read()).toEqual({ kind: 'miss', invalid: false, failure: undefined });
    });

    it('answers a read of a value longer than any proxy writes without sending it', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      await cred.write(tokenAt(h.now(), 60_000));
      const [entry] = (await h.dump()).filter((k) => k.key.endsWith('}'));
      const failureKey = `${entry!.key}:failure`;
      await h.put(entry!.key, { ...(entry!.value as Record<string, string>), ct: 'A'.repeat(4 * STORE_VALUE_MAX_BYTES) });
      await h.put(failureKey, 'A'.repeat(4 * STORE_VALUE_MAX_BYTES), 60_000);
      const before = await h.bytesSent?.();
      expect(await cred.read()).toEqual({ kind: 'miss', invalid: true, failure: undefined });
      const after = await h.bytesSent?.();
      if (before !== undefined && after !== undefined) expect(after - before).toBeLessThan(STORE_VALUE_MAX_BYTES);
    });

    it.each([10, 100])(
      'reads an entry and a failure record of %i MB as garbage without reading either, counts them, and the next write replaces both',
      async (mb) => {
        const seen: AnomalyKind[] = [];
        const cred = await (await h.open({ observer: { onAnomaly: (kind) => seen.push(kind) } })).slot(CREDENTIAL);
        await cred.write(tokenAt(h.now(), 60_000));
        const [entry] = (await h.dump()).filter((k) => k.key.endsWith('}'));
        const { fp } = entry!.value as Record<string, string>;
        const failureKey = `${entry!.key}:failure`;
        // A far exp beside the entry's own fingerprint: only the size of its ct says no proxy wrote it.
        await h.put(entry!.key, { exp: '99999999999999', fp: fp! });
        await h.fill(entry!.key, mb * MB, { field: 'ct' });
        await h.fill(failureKey, mb * MB, { ttlMs: 600_000 });
        const before = await h.bytesSent?.();
        const { value: read, commands } = await h.scriptCommands(() => cred.read());
        const after = await h.bytesSent?.();
        expect(read).toEqual({ kind: 'miss', invalid: true, failure: undefined });
        expect([...new Set(seen)].sort()).toEqual(['invalid_entry', 'invalid_failure']);
        if (before !== undefined && after !== undefined) expect(after - before).toBeLessThan(STORE_VALUE_MAX_BYTES);
        if (commands !== undefined) {
          const on = (key: string) => commands.filter((c) => c[1] === key).map((c) => c.slice(0, 3).join(' ').toUpperCase());
          // Sizes asked, nothing read: no GET, HGET, HMGET or HGETALL of either key.
          expect(on(entry!.key)).toContain(`HSTRLEN ${entry!.key.toUpperCase()} CT`);
          expect(on(failureKey)).toContain(`STRLEN ${failureKey.toUpperCase()}`);
          expect([...on(entry!.key), ...on(failureKey)].filter((c) => /^H?(M?GET|GETALL) /.test(c))).toEqual([]);
        }
        const next = tokenAt(h.now(), 30_000);
        expect(await cred.write(next)).toEqual({ kind: 'written' });
        expect(await cred.read()).toMatchObject({ kind: 'hit', token: next, failure: undefined });
        const keys = await h.dump();
        expect(keys.map((k) => k.key).sort()).toEqual([entry!.key]);
        expect(JSON.stringify(keys).length).toBeLessThan(STORE_VALUE_MAX_BYTES);
      },
      120_000,
    );

    it('cuts a failure record kept longer than a wait the reader could ask for to that wait, never lengthening one, and counts it', async () => {
      const seen: AnomalyKind[] = [];
      const cred = await (await h.open({ observer: { onAnomaly: (kind) => seen.push(kind) } })).slot(CREDENTIAL);
      await cred.recordFailure({ nextAttemptAtMs: h.now() + 10_000, outcome: 'rate_limited' });
      const [record] = (await h.dump()).filter((k) => k.key.endsWith(':failure'));
      // Replayed with twenty days to live.
      const days20 = 20 * 86_400_000;
      await h.expire(record!.key, days20);
      const read = await cred.read();
      expect(read).toMatchObject({ kind: 'miss', failure: { outcome: 'rate_limited' } });
      const { failure } = read as { failure: { keptUntilMs: number; nextAttemptAtMs: number } };
      expect(failure.keptUntilMs - h.now()).toBeGreaterThan(days20 - 60_000);
      expect(failure.nextAttemptAtMs - h.now()).toBeLessThanOrEqual(10_000);
      expect(await cred.cutFailure(300_000)).toEqual({ kind: 'cut' });
      const ttl = async () => (await h.dump()).find((k) => k.key === record!.key)!.ttlMs;
      expect(await ttl()).toBeLessThanOrEqual(300_000);
      expect(await ttl()).toBeGreaterThan(200_000);
      expect(await cred.cutFailure(600_000)).toEqual({ kind: 'kept' });
      expect(await ttl()).toBeLessThanOrEqual(300_000);
      expect(seen).toEqual(['failure_too_long', 'failure_too_long']);
    });

    it.each([
      ['a hash of junk with a far exp', (ct: string) => ({ exp: '99999999999999', fp: 'f'.repeat(64), ct: `x${ct.slice(1)}` })],
      ['a string', () => 'garbage'],
      ['an exp changed beside its sealed token', (ct: string, fp: string) => ({ exp: '99999999999999', fp, ct })],
      ['a hash without its sealed token', () => ({ exp: '99999999999999' })],
      [
        'a sealed token longer than any proxy writes, with a far exp',
        (ct: string, fp: string) => ({ exp: '99999999999999', fp, ct: ct + 'A'.repeat(STORE_VALUE_MAX_BYTES) }),
      ],
    ])('reads %s as an invalid miss, never served, and the next write replaces it', async (_what, garbage) => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      await cred.write(tokenAt(h.now(), 60_000));
      const [entry] = (await h.dump()).filter((k) => k.key.endsWith('}'));
      const { ct, fp } = entry!.value as Record<string, string>;
      await h.put(entry!.key, garbage(ct!, fp!));
      expect(await cred.read()).toEqual({ kind: 'miss', invalid: true, failure: undefined });
      const next = tokenAt(h.now(), 30_000);
      expect(await cred.write(next)).toEqual({ kind: 'written' });
      expect(await cred.read()).toMatchObject({ kind: 'hit', token: next });
    });

    it("reads another credential's entry copied under this one's name as invalid", async () => {
      const store = await h.open();
      const cred = await store.slot(CREDENTIAL);
      const other = await store.slot({ ...CREDENTIAL, description: `${DESCRIPTION} audience=x` });
      await cred.write(tokenAt(h.now(), 60_000));
      await other.write(tokenAt(h.now(), 60_000));
      const entries = (await h.dump()).filter((k) => k.key.endsWith('}'));
      await h.put(entries[0]!.key, entries[1]!.value as Record<string, string>, 60_000);
      const reads = [await cred.read(), await other.read()];
      expect(reads.map((r) => r.kind).sort()).toEqual(['hit', 'miss']);
      expect(reads.find((r) => r.kind === 'miss')).toMatchObject({ invalid: true });
    });

    it('keeps nothing readable without the credential: no token, secret, client id, scope or URL, and no life past the token', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      const token = tokenAt(h.now(), 60_000);
      const writing = h.now();
      await cred.write(token);
      await cred.takeLease();
      await cred.recordFailure({ nextAttemptAtMs: h.now() + 10_000, outcome: 'rate_limited' });
      const keys = await h.dump();
      expect(keys.map((k) => k.key.slice(h.prefix.length).replace(/[0-9a-f]{64}/, 'H')).sort()).toEqual([
        'v1:{H}',
        'v1:{H}:failure',
        'v1:{H}:lease',
      ]);
      const everything = JSON.stringify(keys);
      for (const secret of [
        token.accessToken,
        token.accessToken.split('.')[1]!,
        SECRET,
        'ticket-client-7',
        'tickets.read',
        'idp.example.com',
        'rate_limited',
      ]) {
        expect(everything).not.toContain(secret);
      }
      const entry = keys.find((k) => k.key.endsWith('}'))!;
      expect(Object.keys(entry.value).sort()).toEqual(['ct', 'exp', 'fp']);
      expect((entry.value as Record<string, string>).exp).toBe(String(token.usableUntilMs));
      expect(entry.ttlMs).toBeGreaterThan(0);
      // The time to live ends at the last usable moment, counted from the write (however long it took to arrive).
      expect(entry.ttlMs).toBeLessThanOrEqual(token.usableUntilMs - writing + 1);
      for (const k of keys) expect(k.ttlMs).toBeGreaterThan(0);
    });

    it('seals each write with a fresh nonce: the same token written twice reads differently in the store', async () => {
      const cred = await (await h.open()).slot(CREDENTIAL);
      const token = tokenAt(h.now(), 60_000);
      await cred.write(token);
      const first = (await h.dump()).find((k) => k.key.endsWith('}'))!.value as Record<string, string>;
      await cred.deleteIfSame(token.accessToken);
      await cred.write(token);
      const second = (await h.dump()).find((k) => k.key.endsWith('}'))!.value as Record<string, string>;
      expect(second.fp).toBe(first.fp);
      expect(second.ct).not.toBe(first.ct);
    });

    it('counts every operation by its result for the metrics', async () => {
      const counted: string[] = [];
      const observer = { onOperation: (op: StoreOperation, result: StoreResult) => counted.push(`${op}:${result}`) };
      const cred = await (await h.open({ observer })).slot(CREDENTIAL);
      await cred.read();
      const token = tokenAt(h.now(), 60_000);
      await cred.write(token);
      await cred.read();
      const lease = await cred.takeLease();
      await cred.takeLease();
      await (lease as Extract<typeof lease, { kind: 'acquired' }>).lease.release();
      await cred.deleteIfSame(token.accessToken);
      await cred.recordFailure({ nextAttemptAtMs: h.now() + 5_000, outcome: 'timeout' });
      const [entryKey] = (await h.dump()).filter((k) => k.key.endsWith(':failure')).map((k) => k.key.replace(/:failure$/, ''));
      await h.put(entryKey!, 'garbage', 60_000);
      await cred.read();
      expect(counted).toEqual([
        'read:miss',
        'write:ok',
        'read:hit',
        'lease:ok',
        'lease:taken',
        'lease:ok',
        'delete:ok',
        'write:ok',
        'read:invalid',
      ]);
    });
  });
}
