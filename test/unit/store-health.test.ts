/**
 * The store is never worse than none: every operation bounded by the store timeout, the store
 * counted down after a timeout or a failed connection and left alone until a background check
 * (with jitter) finds it, each change logged once. On the fake clock, with the in-memory server
 * playing the faults.
 */
import { describe, expect, it } from 'vitest';
import { CHECK_CAP_MS } from '../../src/store/health.js';
import { createMemoryTokenStore, MemoryStoreServer } from '../../src/store/memory-backend.js';
import { scryptDeriver, sharedDeriver } from '../../src/store/slot-key.js';
import type { Slot, StoredToken, TokenStore } from '../../src/store/contract.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { FakeLog, track } from '../helpers/fakes.js';

const derive = sharedDeriver(scryptDeriver());
const CREDENTIAL = { description: 'client_id=app', keyMaterial: Buffer.from('secret') };
const TIMEOUT_MS = 250;

async function setup(random = () => 0.5): Promise<{
  clock: FakeClock;
  server: MemoryStoreServer;
  store: TokenStore;
  cred: Slot;
  log: FakeLog;
  health: boolean[];
}> {
  const clock = new FakeClock();
  const server = new MemoryStoreServer(clock);
  const log = new FakeLog();
  const health: boolean[] = [];
  const store = createMemoryTokenStore({
    server,
    clock,
    random,
    log,
    leaseMs: 11_000,
    timeoutMs: TIMEOUT_MS,
    observer: { onHealth: (up) => health.push(up) },
    derive,
  });
  return { clock, server, store, cred: await store.slot(CREDENTIAL), log, health };
}

function token(now: number): StoredToken {
  return { accessToken: 'tok', tokenType: 'Bearer', issuedAtMs: now, expiresAtMs: now + 3_600_000, usableUntilMs: now + 3_590_000 };
}

describe('the token store when its server misbehaves', () => {
  it('answers within the store timeout when the server accepts and never answers, then refuses at once without asking it', async () => {
    const { clock, server, store, cred } = await setup();
    server.fault = 'hang';
    const read = track(cred.read());
    await clock.advance(TIMEOUT_MS - 1);
    expect(read.state).toBe('pending');
    await clock.advance(1);
    expect(read.value).toMatchObject({ kind: 'unavailable', reason: 'timeout', detail: expect.stringContaining('TOKEN_STORE_TIMEOUT_MS') });
    expect(store.up).toBe(false);
    const asked = server.commands;
    const again = track(cred.takeLease());
    await settle();
    expect(again.value).toMatchObject({ kind: 'unavailable', reason: 'down' });
    expect(server.commands).toBe(asked);
  });

  it('finds the store again with a background check, and shares again without being asked to', async () => {
    const { clock, server, store, cred } = await setup();
    server.fault = 'unreachable';
    expect(await cred.read()).toMatchObject({ kind: 'unavailable', reason: 'error' });
    expect(store.up).toBe(false);
    server.fault = 'none';
    await clock.advance(1_000);
    expect(store.up).toBe(true);
    expect(await cred.write(token(clock.now()))).toEqual({ kind: 'written' });
    expect((await cred.read()).kind).toBe('hit');
  });

  it('spreads its checks with jitter, the wait doubling from 0.5-1 s up to 15-30 s', async () => {
    for (const [random, first] of [
      [0, 500],
      [1, 1_000],
    ] as const) {
      const { clock, server, cred } = await setup(() => random);
      server.fault = 'unreachable';
      await cred.read();
      const times: number[] = [];
      const start = clock.now();
      for (let i = 0; i < 8; i++) {
        const before = server.commands;
        while (server.commands === before) await clock.advance(10);
        times.push(clock.now() - start);
      }
      const gaps = times.map((t, i) => t - (times[i - 1] ?? 0));
      expect(gaps[0]).toBe(first);
      expect(gaps[1]).toBe(first * 2);
      expect(gaps.at(-1)).toBe((random === 0 ? 0.5 : 1) * CHECK_CAP_MS);
    }
  });

  it('logs the outage once, whatever the number of operations, and the return once', async () => {
    const { clock, server, cred, log } = await setup();
    server.fault = 'unreachable';
    for (let i = 0; i < 5; i++) await cred.read();
    await clock.advance(20_000);
    expect(log.lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      'warn token store unavailable: tokens are fetched as without it until a check finds it again',
    ]);
    expect(log.lines[0]!.obj).toMatchObject({ store: 'memory', problem: 'ECONNREFUSED' });
    server.fault = 'none';
    await clock.advance(CHECK_CAP_MS);
    expect(log.lines.map((l) => l.level)).toEqual(['warn', 'info']);
    expect(log.lines[1]!.msg).toBe('token store usable again');
  });

  it('logs a refused password at error', async () => {
    const { server, cred, log } = await setup();
    server.fault = 'wrongpass';
    expect(await cred.read()).toMatchObject({ kind: 'unavailable', reason: 'error', detail: expect.stringContaining('WRONGPASS') });
    expect(log.at('error')).toHaveLength(1);
  });

  it('fails only the write when the server is out of memory: reads are served and the store stays up', async () => {
    const { server, store, cred, log, clock, health } = await setup();
    await cred.write(token(clock.now()));
    server.fault = 'oom';
    expect(await cred.write({ ...token(clock.now()), accessToken: 'newer', usableUntilMs: clock.now() + 3_595_000 })).toMatchObject({
      kind: 'unavailable',
      reason: 'error',
    });
    expect(await cred.takeLease()).toMatchObject({ kind: 'unavailable', reason: 'error' });
    expect(store.up).toBe(true);
    expect(await cred.read()).toMatchObject({ kind: 'hit', token: { accessToken: 'tok' } });
    expect(await cred.deleteIfSame('tok')).toEqual({ kind: 'deleted' });
    expect(log.at('warn').map((l) => l.obj)).toEqual([expect.objectContaining({ problem: 'oom' })]);
    expect(health).toEqual([true, false, true]);
  });

  it('refuses every write of a replica after a failover, deletes included, and reads from it', async () => {
    const { server, cred, clock } = await setup();
    await cred.write(token(clock.now()));
    server.fault = 'readonly';
    expect(await cred.deleteIfSame('tok')).toMatchObject({ kind: 'unavailable', reason: 'error' });
    expect(await cred.recordFailure({ nextAttemptAtMs: clock.now() + 1_000, outcome: 'timeout' })).toMatchObject({ kind: 'unavailable' });
    expect((await cred.read()).kind).toBe('hit');
  });

  it('tells the health gauge the first outcome and every change, not every operation', async () => {
    const { server, cred, clock, health } = await setup();
    await cred.read();
    await cred.read();
    server.fault = 'unreachable';
    await cred.read();
    await cred.read();
    server.fault = 'none';
    await clock.advance(1_000);
    expect(health).toEqual([true, false, true]);
  });

  it('probes the store for check whatever its state, within the timeout, and a success ends the outage', async () => {
    const { server, store, clock } = await setup();
    server.fault = 'hang';
    const probe = track(store.probe());
    await clock.advance(TIMEOUT_MS);
    expect(probe.value).toMatchObject({ kind: 'unavailable', reason: 'timeout' });
    server.fault = 'none';
    expect(await store.probe()).toEqual({ kind: 'ok' });
    expect(store.up).toBe(true);
  });

  it('stops checking once closed', async () => {
    const { server, store, cred, clock } = await setup();
    server.fault = 'unreachable';
    await cred.read();
    expect(clock.pending).toBeGreaterThan(0);
    await store.close();
    expect(clock.pending).toBe(0);
  });

  it('does without the store for a credential whose key cannot be derived, saying so once', async () => {
    const clock = new FakeClock();
    const log = new FakeLog();
    const store = createMemoryTokenStore({
      server: new MemoryStoreServer(clock),
      clock,
      random: Math.random,
      log,
      leaseMs: 11_000,
      derive: () => Promise.reject(new RangeError('Invalid scrypt params: memory limit exceeded')),
    });
    const cred = await store.slot(CREDENTIAL);
    for (const answer of [await cred.read(), await cred.takeLease(), await cred.write(token(clock.now()))]) {
      expect(answer).toMatchObject({ kind: 'unavailable', reason: 'error', detail: expect.stringContaining('memory limit exceeded') });
    }
    expect(log.at('error')).toHaveLength(1);
    expect(store.up).toBe(true);
  });
});
