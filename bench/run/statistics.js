// The figures of a scenario from its rounds: medians, ratios taken per round, and the geometric
// mean of those ratios with a 95 % interval. Pure functions of the samples; bench/README.md
// ("Reading it") says why ratios are taken per round and how to read the interval.

/** The median of the finite values, NaN when there is none. */
export function median(values) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * The geometric mean of per-round ratios and a 95 % interval for it, by resampling the rounds
 * (the bootstrap, with a fixed seed so the same rounds print the same interval). With few rounds
 * the interval is wide, which is the point: it says how far apart two candidates must be to be told
 * apart. Ratios that are not positive and finite are left out.
 */
export function geometricMeanInterval(ratios, { resamples = 2000 } = {}) {
  const logs = ratios.filter((r) => r > 0 && Number.isFinite(r)).map(Math.log);
  if (logs.length === 0) return { mean: NaN, low: NaN, high: NaN };
  // Park and Miller's minimal standard generator: tiny, and the same draws on every run.
  let seed = 1;
  const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const means = [];
  for (let i = 0; i < resamples; i++) means.push(mean(logs.map(() => logs[Math.floor(random() * logs.length)])));
  means.sort((a, b) => a - b);
  const low = means[Math.floor(resamples * 0.025)];
  const high = means[Math.ceil(resamples * 0.975) - 1];
  return { mean: Math.exp(mean(logs)), low: Math.exp(low), high: Math.exp(high) };
}

/**
 * A candidate's rounds in a few figures: the medians of the rounds it served (a round in which it
 * answered nothing, because it hung, is counted in `stalledRounds`, not averaged in), and the
 * errors of every round.
 */
export function summarizeRounds(rounds) {
  const served = rounds.filter((x) => x.requests > 0);
  return {
    rps: median(served.map((x) => x.rps)),
    p50Ms: median(served.map((x) => x.p50Ms)),
    p99Ms: median(served.map((x) => x.p99Ms)),
    cpuUsPerRequest: median(served.map((x) => x.cpuUsPerRequest)),
    errors: rounds.reduce((a, x) => a + x.errors, 0),
    stalledRounds: rounds.length - served.length,
  };
}

/**
 * `figure` of `a` over `b`, one ratio per round both ran (paired by the rounds' `round`, so a
 * candidate whose process exited has no ratio for the rounds after): the machine's speed drifts
 * within a run, and two candidates measured in the same round share the drift.
 */
export function ratiosPerRound(a, b, figure) {
  const byRound = new Map(b.map((x) => [x.round, x]));
  return a.flatMap((x) => {
    const other = byRound.get(x.round);
    return other === undefined ? [] : [x[figure] / other[figure]];
  });
}

/**
 * The product against another candidate: the medians of the per-round ratios of CPU per request,
 * req/s and p99, the geometric mean of the CPU ratios with its interval, every CPU ratio (the
 * spread), and the ratio of the peak resident sets (one figure per process, not per round).
 */
export function compare(product, other) {
  const cpuPerRound = ratiosPerRound(product.rounds, other.rounds, 'cpuUsPerRequest');
  return {
    cpu: median(cpuPerRound),
    cpuInterval: geometricMeanInterval(cpuPerRound),
    rps: median(ratiosPerRound(product.rounds, other.rounds, 'rps')),
    p99: median(ratiosPerRound(product.rounds, other.rounds, 'p99Ms')),
    peakRss: product.peakRssMb / other.peakRssMb,
    cpuSpread: cpuPerRound,
  };
}
