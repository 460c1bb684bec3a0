// The types of statistics.js, for the unit tests that import it.

/** The figures of one round of one candidate. */
export interface Round {
  round: number;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  cpuUsPerRequest: number;
}

export interface Interval {
  mean: number;
  low: number;
  high: number;
}

export interface RoundsSummary {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerRequest: number;
  errors: number;
  stalledRounds: number;
}

export interface Comparison {
  cpu: number;
  cpuInterval: Interval;
  rps: number;
  p99: number;
  peakRss: number;
  cpuSpread: number[];
}

export function median(values: readonly number[]): number;
export function geometricMeanInterval(ratios: readonly number[], options?: { resamples?: number }): Interval;
export function summarizeRounds(rounds: readonly Round[]): RoundsSummary;
export function ratiosPerRound(a: readonly Round[], b: readonly Round[], figure: 'rps' | 'p50Ms' | 'p99Ms' | 'cpuUsPerRequest'): number[];
export function compare(
  product: { rounds: readonly Round[]; peakRssMb: number },
  other: { rounds: readonly Round[]; peakRssMb: number },
): Comparison;
