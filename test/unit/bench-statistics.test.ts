import { describe, expect, it } from 'vitest';
import type { Round } from '../../bench/run/statistics.js';
import { compare, geometricMeanInterval, median, ratiosPerRound, summarizeRounds } from '../../bench/run/statistics.js';

/** A round's figures, the ones a test does not name at fixed values. */
function round(n: number, figures: Partial<Round> = {}): Round {
  return { round: n, requests: 1000, rps: 1000, p50Ms: 1, p99Ms: 5, errors: 0, cpuUsPerRequest: 50, ...figures };
}

describe('median', () => {
  it('is the middle value of an odd count and the mean of the two middle values of an even count', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('leaves out values that are not finite, and is NaN when none is left', () => {
    expect(median([NaN, 5, Infinity, 1])).toBe(3);
    expect(median([NaN])).toBeNaN();
    expect(median([])).toBeNaN();
  });

  it('leaves the values it is given in their order', () => {
    const values = [3, 1, 2];
    median(values);
    expect(values).toEqual([3, 1, 2]);
  });
});

describe('geometricMeanInterval', () => {
  it('is the geometric mean of the ratios, with an interval inside their range', () => {
    const { mean, low, high } = geometricMeanInterval([2, 8]);
    expect(mean).toBeCloseTo(4, 12);
    expect(low).toBeCloseTo(2, 12);
    expect(high).toBeCloseTo(8, 12);
  });

  it('collapses the interval onto the ratio when every round gives the same one', () => {
    expect(geometricMeanInterval([1.5, 1.5, 1.5])).toEqual({ mean: 1.5, low: 1.5, high: 1.5 });
  });

  it('leaves out ratios that are not positive and finite, and is NaN when none is left', () => {
    expect(geometricMeanInterval([2, 0, -1, NaN, Infinity, 8])).toEqual(geometricMeanInterval([2, 8]));
    const none = geometricMeanInterval([0, NaN]);
    expect([none.mean, none.low, none.high]).toEqual([NaN, NaN, NaN]);
  });

  it('prints the same interval for the same rounds, the one the benchmark printed before its split into modules', () => {
    const ratios = [1.1, 0.9, 1.2, 1.05, 0.95];
    const interval = geometricMeanInterval(ratios);
    expect(geometricMeanInterval(ratios)).toEqual(interval);
    expect(interval.mean).toBeCloseTo(1.03454, 5);
    expect(interval.low).toBeCloseTo(0.94704, 5);
    expect(interval.high).toBeCloseTo(1.12841, 5);
  });

  it('holds 1.00 with three rounds of a 5 % difference and excludes it with thirty rounds of the same spread', () => {
    const spread = [0.95, 1.15, 1.05];
    const few = geometricMeanInterval(spread);
    const many = geometricMeanInterval(Array.from({ length: 30 }, (_, i) => spread[i % 3]!));
    expect(many.mean).toBeCloseTo(few.mean, 12);
    expect(few.low).toBeLessThan(1);
    expect(many.low).toBeGreaterThan(1);
    expect(many.high - many.low).toBeLessThan((few.high - few.low) / 2);
  });
});

describe('summarizeRounds', () => {
  it('takes the medians of the rounds served, counts the rounds that served nothing, and sums every round’s errors', () => {
    const summary = summarizeRounds([
      round(1, { rps: 900, p50Ms: 2, p99Ms: 9, cpuUsPerRequest: 40, errors: 1 }),
      round(2, { requests: 0, rps: 0, p50Ms: NaN, p99Ms: NaN, cpuUsPerRequest: Infinity, errors: 50 }),
      round(3, { rps: 1100, p50Ms: 4, p99Ms: 11, cpuUsPerRequest: 60, errors: 2 }),
      round(4, { rps: 1000, p50Ms: 3, p99Ms: 10, cpuUsPerRequest: 50 }),
    ]);
    expect(summary).toEqual({ rps: 1000, p50Ms: 3, p99Ms: 10, cpuUsPerRequest: 50, errors: 53, stalledRounds: 1 });
  });
});

describe('ratiosPerRound', () => {
  it('pairs the rounds by number, so a candidate that exited after round 2 gives ratios for rounds 1 and 2 only', () => {
    const product = [round(1, { rps: 1200 }), round(2, { rps: 900 }), round(3, { rps: 1000 })];
    const exited = [round(1, { rps: 600 }), round(2, { rps: 300 })];
    expect(ratiosPerRound(product, exited, 'rps')).toEqual([2, 3]);
  });

  it('pairs round 2 with round 2 when the other candidate has no figures for round 1', () => {
    const product = [round(1, { cpuUsPerRequest: 40 }), round(2, { cpuUsPerRequest: 60 })];
    expect(ratiosPerRound(product, [round(2, { cpuUsPerRequest: 30 })], 'cpuUsPerRequest')).toEqual([2]);
  });
});

describe('compare', () => {
  it('gives the medians of the per-round ratios, every CPU ratio, and the ratio of the peak resident sets', () => {
    const product = {
      peakRssMb: 120,
      rounds: [
        round(1, { cpuUsPerRequest: 45, rps: 2000, p99Ms: 6 }),
        round(2, { cpuUsPerRequest: 60, rps: 1500, p99Ms: 12 }),
        round(3, { cpuUsPerRequest: 40, rps: 2400, p99Ms: 4 }),
      ],
    };
    const other = {
      peakRssMb: 240,
      rounds: [
        round(1, { cpuUsPerRequest: 50, rps: 1000, p99Ms: 3 }),
        round(2, { cpuUsPerRequest: 50, rps: 1000, p99Ms: 4 }),
        round(3, { cpuUsPerRequest: 50, rps: 1200, p99Ms: 4 }),
      ],
    };
    const result = compare(product, other);
    expect(result.cpuSpread).toEqual([0.9, 1.2, 0.8]);
    expect(result.cpu).toBeCloseTo(0.9, 12);
    expect(result.rps).toBeCloseTo(2, 12);
    expect(result.p99).toBeCloseTo(2, 12);
    expect(result.peakRss).toBe(0.5);
    expect(result.cpuInterval).toEqual(geometricMeanInterval([0.9, 1.2, 0.8]));
  });
});
