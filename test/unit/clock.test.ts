import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/core/clock.js';

describe('systemClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs a timer after its delay, and not once cleared', () => {
    vi.useFakeTimers();
    const ran: string[] = [];
    systemClock.setTimeout(() => ran.push('a'), 1_000);
    const b = systemClock.setTimeout(() => ran.push('b'), 1_000);
    systemClock.clearTimeout(b);
    vi.advanceTimersByTime(999);
    expect(ran).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(ran).toEqual(['a']);
  });

  it('does not fire at once for a delay beyond the 2^31 - 1 ms a Node timer holds', () => {
    // A token living a year is refreshed after about 290 days: a timer Node would run after 1 ms.
    vi.useFakeTimers();
    let ran = 0;
    systemClock.setTimeout(() => ran++, 290 * 24 * 3_600_000);
    vi.advanceTimersByTime(24 * 3_600_000);
    expect(ran).toBe(0);
    vi.advanceTimersByTime(2 ** 31);
    expect(ran).toBe(1);
  });

  it('tells the time in milliseconds since the epoch', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
