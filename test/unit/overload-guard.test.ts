import { describe, expect, it } from 'vitest';
import { startOverloadGuard } from '../../src/overload/overload-guard.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const MB = 1024 * 1024;

/** A guard over a 100 MB limit whose memory the test sets, counting samples and compactions. */
function guarded(startMb = 50, endStalled?: (bytes: number, idleMs: number) => number, heldMb?: () => number) {
  const clock = new FakeClock();
  const log = new FakeLog();
  const state = { usedMb: startMb, samples: 0, compactions: 0, afterCompactMb: undefined as number | undefined };
  const guard = startOverloadGuard({
    limitBytes: 100 * MB,
    usage: () => {
      state.samples += 1;
      return state.usedMb * MB;
    },
    compact: () => {
      state.compactions += 1;
      if (state.afterCompactMb !== undefined) state.usedMb = state.afterCompactMb;
    },
    action: endStalled === undefined ? undefined : { endStalled },
    held: heldMb === undefined ? undefined : () => heldMb() * MB,
    clock,
    log,
  });
  return { clock, log, state, guard };
}

describe('the overload guard', () => {
  it('sheds new requests above 90 % of the limit and serves them again below 80 %, logging each change once', async () => {
    const { clock, log, state, guard } = guarded();
    expect(guard.shedding).toBe(false);
    state.usedMb = 91;
    await clock.advance(1_000);
    expect(guard.shedding).toBe(true);
    // Between the two bounds nothing changes.
    state.usedMb = 85;
    await clock.advance(2_000);
    expect(guard.shedding).toBe(true);
    state.usedMb = 79;
    await clock.advance(100);
    expect(guard.shedding).toBe(false);
    state.usedMb = 85;
    await clock.advance(2_000);
    expect(guard.shedding).toBe(false);
    expect(log.at('warn')).toHaveLength(1);
    expect(log.at('warn')[0]).toMatchObject({ obj: { usedMb: 91, limitMb: 100 } });
    expect(log.at('info')).toHaveLength(1);
    guard.stop();
  });

  it('samples once a second, and ten times a second above 70 % of the limit', async () => {
    const { clock, state, guard } = guarded(50);
    const before = state.samples;
    await clock.advance(10_000);
    expect(state.samples - before).toBe(10);
    state.usedMb = 75;
    await clock.advance(1_000);
    const fast = state.samples;
    await clock.advance(1_000);
    expect(state.samples - fast).toBe(10);
    guard.stop();
  });

  it('compacts the heap as soon as shedding starts, then at most once a second while it lasts', async () => {
    const { clock, state, guard } = guarded(50);
    state.usedMb = 95;
    await clock.advance(1_000);
    expect(state.compactions).toBe(1);
    await clock.advance(900);
    expect(state.compactions).toBe(1);
    await clock.advance(100);
    expect(state.compactions).toBe(2);
    await clock.advance(3_000);
    expect(state.compactions).toBe(5);
    state.usedMb = 60;
    await clock.advance(10_000);
    expect(state.compactions).toBe(5);
    guard.stop();
  });

  it('ends shedding at the next sample when the compaction brought memory below 80 %', async () => {
    const { clock, state, guard } = guarded(50);
    state.usedMb = 95;
    state.afterCompactMb = 70;
    await clock.advance(1_000);
    expect(guard.shedding).toBe(true);
    await clock.advance(100);
    expect(guard.shedding).toBe(false);
    guard.stop();
  });

  it('starts shedding at once when the memory is already above 90 % at start', () => {
    const { state, guard } = guarded(95);
    expect(guard.shedding).toBe(true);
    expect(state.compactions).toBe(1);
    guard.stop();
  });

  it('stops sampling once stopped', async () => {
    const { clock, state, guard } = guarded(50);
    guard.stop();
    const before = state.samples;
    await clock.advance(10_000);
    expect(state.samples).toBe(before);
  });

  it('asks, at each sample while shedding, to end the exchanges idle 5 s until what they hold covers memory above 80 %', async () => {
    const asked: [number, number][] = [];
    const { clock, log, state, guard } = guarded(50, (bytes, idleMs) => {
      asked.push([bytes / MB, idleMs]);
      return asked.length <= 2 ? 3 : 0;
    });
    await clock.advance(5_000);
    expect(asked).toEqual([]);
    state.usedMb = 95;
    await clock.advance(1_000);
    await clock.advance(100);
    await clock.advance(100);
    expect(asked).toEqual([
      [15, 5_000],
      [15, 5_000],
      [15, 5_000],
    ]);
    // Logged once for the shedding period; the count is the metrics'.
    expect(log.at('warn').filter((l) => String(l.msg).startsWith('memory above 80 %'))).toMatchObject([{ obj: { ended: 3 } }]);
    // What was ended is compacted at the next sample, not a second later.
    expect(state.compactions).toBe(3);
    state.usedMb = 70;
    await clock.advance(100);
    expect(guard.shedding).toBe(false);
    await clock.advance(5_000);
    expect(asked).toHaveLength(3);
    guard.stop();
  });

  it('ends shedding on the memory held, when malloc keeps the rest, and starts again once the kernel count grows past where it ended', async () => {
    let heldMb = 95;
    const { clock, log, state, guard } = guarded(50, undefined, () => heldMb);
    state.usedMb = 95;
    await clock.advance(1_000);
    expect(guard.shedding).toBe(true);
    // The burst is over: the process holds 70 MB, glibc keeps the rest for reuse.
    heldMb = 70;
    await clock.advance(100);
    expect(guard.shedding).toBe(false);
    expect(log.at('info').at(-1)).toMatchObject({ obj: { usedMb: 95, heldMb: 70, limitMb: 100 } });
    // New load first reuses what is kept: the kernel count stays, and nothing is shed.
    heldMb = 88;
    await clock.advance(1_000);
    expect(guard.shedding).toBe(false);
    // Past where it ended (and a margin), the process takes memory from the system again.
    state.usedMb = 98;
    await clock.advance(100);
    expect(guard.shedding).toBe(true);
    guard.stop();
  });

  it('starts shedding again once what is held passes 90 %, when the kernel count it ended at lies above the limit', async () => {
    let heldMb = 120;
    const { clock, state, guard } = guarded(50, undefined, () => heldMb);
    // A burst took the kernel's count past the limit (no cgroup kills here: MEMORY_LIMIT_MB).
    state.usedMb = 120;
    await clock.advance(1_000);
    expect(guard.shedding).toBe(true);
    heldMb = 70;
    await clock.advance(100);
    expect(guard.shedding).toBe(false);
    // New load reuses what glibc keeps: the kernel's count never passes where it ended, plus the
    // margin, but what is held does.
    heldMb = 89;
    await clock.advance(1_000);
    expect(guard.shedding).toBe(false);
    heldMb = 91;
    await clock.advance(100);
    expect(guard.shedding).toBe(true);
    // And ends again once it falls.
    heldMb = 75;
    await clock.advance(100);
    expect(guard.shedding).toBe(false);
    guard.stop();
  });
});
