import { describe, expect, it } from 'vitest';
import {
  BACKOFF_BASE_MS,
  BACKOFF_CAP_MS,
  backoffCapMs,
  backoffDelay,
  expiryMarginMs,
  refreshOffsetMs,
  DEFAULT_SCHEDULE,
} from '../../src/token/refresh-schedule.js';

const fixed = (r: number) => () => r;

describe('backoffDelay', () => {
  it('starts at about 0.5 s and doubles up to a 30 s cap', () => {
    expect(BACKOFF_BASE_MS).toBe(500);
    expect(BACKOFF_CAP_MS).toBe(30_000);
    const ceilings = [1, 2, 3, 4, 5, 6, 7, 8, 20, 1_000].map((n) => backoffDelay(n, fixed(0.999_999)));
    expect(ceilings).toEqual([499, 999, 1_999, 3_999, 7_999, 15_999, 29_999, 29_999, 29_999, 29_999]);
  });

  it('is zero when the jitter is zero (full jitter)', () => {
    for (const n of [1, 2, 5, 10]) expect(backoffDelay(n, fixed(0))).toBe(0);
  });

  it('scales linearly with the jitter inside the ceiling', () => {
    expect(backoffDelay(3, fixed(0.5))).toBe(1_000);
    expect(backoffDelay(1, fixed(0.25))).toBe(125);
  });

  it('treats an attempt below one as the first', () => {
    expect(backoffDelay(0, fixed(0.999_999))).toBe(499);
  });

  it('never waits less than Retry-After, and waits the backoff when it is longer', () => {
    expect(backoffDelay(1, fixed(0.999_999), 60_000)).toBe(60_000);
    expect(backoffDelay(1, fixed(0), 2_000)).toBe(2_000);
    expect(backoffDelay(7, fixed(0.999_999), 1_000)).toBe(29_999);
    expect(backoffDelay(1, fixed(0.5), 0)).toBe(250);
  });
});

describe('expiryMarginMs', () => {
  it('is a tenth of a short lifetime and 10 s for a long one', () => {
    expect(expiryMarginMs(8_000)).toBe(800);
    expect(expiryMarginMs(100_000)).toBe(10_000);
    expect(expiryMarginMs(3_600_000)).toBe(10_000);
  });
});

describe('refreshOffsetMs', () => {
  it('is the ratio of the lifetime without jitter, the first refresh and the later ones', () => {
    for (const first of [true, false]) {
      expect(refreshOffsetMs(100_000, 0.8, fixed(0), first)).toBe(80_000);
      expect(refreshOffsetMs(3_600_000, 0.5, fixed(0), first)).toBe(1_800_000);
    }
  });

  it('the first falls uniformly between half the ratio and the ratio of the lifetime: never later, never earlier', () => {
    for (const r of [0, 0.1, 0.37, 0.5, 0.9, 0.999_999]) {
      const offset = refreshOffsetMs(3_600_000, 0.8, fixed(r), true);
      expect(offset).toBeLessThanOrEqual(2_880_000);
      expect(offset).toBeGreaterThan(1_440_000);
      expect(offset).toBeCloseTo(2_880_000 * (1 - r / 2), 6);
    }
  });

  it('a later one falls at the ratio less up to a tenth of the lifetime: 3.2-4.0 s of an 8 s token at 0.5', () => {
    for (const r of [0, 0.1, 0.37, 0.5, 0.9, 0.999_999]) {
      const offset = refreshOffsetMs(8_000, 0.5, fixed(r), false);
      expect(offset).toBeLessThanOrEqual(4_000);
      expect(offset).toBeGreaterThan(3_200);
      expect(offset).toBeCloseTo(4_000 - r * 800, 6);
    }
  });

  it('stays positive and within the ratio for a small ratio', () => {
    const offset = refreshOffsetMs(100_000, 0.05, fixed(0.999_999), true);
    expect(offset).toBeGreaterThan(2_500);
    expect(offset).toBeLessThanOrEqual(5_000);
    expect(refreshOffsetMs(100_000, 0.05, fixed(0.999_999), false)).toBe(0);
  });
});

describe('DEFAULT_SCHEDULE', () => {
  it('is the refresh offset and the backoff cap above, with nothing kept between refreshes', () => {
    expect(DEFAULT_SCHEDULE.refreshOffsetMs(3_600_000, 0.8, fixed(0), true)).toBe(2_880_000);
    expect(DEFAULT_SCHEDULE.refreshOffsetMs(3_600_000, 0.8, fixed(0.5), true)).toBe(2_160_000);
    expect(DEFAULT_SCHEDULE.refreshOffsetMs(3_600_000, 0.8, fixed(0.5), false)).toBe(2_700_000);
    expect(DEFAULT_SCHEDULE.backoffCapMs(3_000_000)).toBe(750_000);
  });
});

describe('backoffCapMs', () => {
  it('is 30 s without a valid token and while the token has at most two minutes left', () => {
    for (const v of [0, -5, 1_000, 120_000]) expect(backoffCapMs(v)).toBe(30_000);
  });

  it('grows to a quarter of the usable life left, which never reaches past it', () => {
    expect(backoffCapMs(3_000_000)).toBe(750_000);
    expect(backoffDelay(20, fixed(0.999_999), undefined, backoffCapMs(3_000_000))).toBe(749_999);
  });
});
