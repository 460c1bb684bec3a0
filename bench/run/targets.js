// What the product sets out to be, each target a row: in which scenario, which figure, against
// which candidate (a ratio of the product's figure to its, the median of the rounds'), and the
// bound. `scenario: '*'` is every scenario of the run. The report checks each row whose scenario
// ran; bench/README.md ("Reading it") lists them.
import { BEARER, HTTP_PROXY, MINIMAL, ONE_ROUTE, PRODUCT, TCP, UNTRACED } from './candidates.js';

/** How the product runs, for the targets that depend on it (`runs`): as the image runs it, or as plain `node dist/main.js`. */
export const AS_IMAGE = 'as the image';
export const AS_PLAIN_NODE = 'as plain node';

/**
 * AS_IMAGE when the product runs with the image's NODE_OPTIONS and allocator, AS_PLAIN_NODE with
 * neither, else undefined (then no `runs` target is checked).
 */
export function howProductRuns(settings, imageNodeOptions) {
  const preloaded = settings.productAllocator.env.LD_PRELOAD !== undefined;
  if (settings.productNodeOptions === imageNodeOptions && preloaded) return AS_IMAGE;
  if (settings.productNodeOptions === '' && !preloaded) return AS_PLAIN_NODE;
  return undefined;
}

export const TARGETS = [
  { scenario: 'get-1k', figure: 'cpu', against: MINIMAL, bound: '≤', value: 1.0 },
  { scenario: 'get-1k', figure: 'rps', against: HTTP_PROXY, bound: '≥', value: 2 },
  { scenario: 'get-1k', figure: 'p99', against: MINIMAL, bound: '≤', value: 1.1 },
  { scenario: 'get-1k', figure: 'peakRss', against: MINIMAL, bound: '≤', value: 1.1 },
  // Large bodies: the CPU of the floor for a Node proxy, and memory that does not grow with what
  // passes through (docs/performance.md, "Memory under large bodies"): at most half the minimal
  // proxy's peak, and at most 100 MB as the image runs the product, 128 MB as plain node.
  { scenario: 'get-1m', figure: 'cpu', against: MINIMAL, bound: '≤', value: 1.0 },
  { scenario: 'post-64k', figure: 'cpu', against: MINIMAL, bound: '≤', value: 1.0 },
  { scenario: 'get-1m', figure: 'peakRss', against: MINIMAL, bound: '≤', value: 0.5 },
  { scenario: 'post-1m', figure: 'peakRss', against: MINIMAL, bound: '≤', value: 0.5 },
  { scenario: 'get-1m', figure: 'peakRssMb', runs: AS_IMAGE, bound: '≤', value: 100 },
  { scenario: 'post-1m', figure: 'peakRssMb', runs: AS_IMAGE, bound: '≤', value: 100 },
  { scenario: 'get-1m', figure: 'peakRssMb', runs: AS_PLAIN_NODE, bound: '≤', value: 128 },
  { scenario: 'post-1m', figure: 'peakRssMb', runs: AS_PLAIN_NODE, bound: '≤', value: 128 },
  // A proof on every request (RFC 9449) with the default generated key, against the Bearer path.
  { scenario: 'get-1k-dpop', figure: 'cpu', against: BEARER, bound: '≤', value: 2 },
  // A Unix socket spares the TCP stack: never dearer than loopback TCP, in the same rounds.
  { scenario: 'get-1k-socket', figure: 'cpu', against: TCP, bound: '≤', value: 1.0 },
  // Every request traced and exported costs at most 15 % more CPU than tracing off (docs/performance.md, "Tracing").
  { scenario: 'get-1k-tracing', figure: 'cpu', against: UNTRACED, bound: '≤', value: 1.15 },
  // Choosing among 32 mounted routes costs at most 2 % more CPU than one route (docs/routes.md).
  { scenario: 'get-1k-routes', figure: 'cpu', against: ONE_ROUTE, bound: '≤', value: 1.02 },
  // A token is fetched once and used for its lifetime (one hour, longer than any scenario).
  { scenario: '*', figure: 'tokenFetches', bound: '=', value: 1 },
];

/** Each figure's name; `ratio`: it is read from the product's ratios to `against`, else from the product's own summary. */
const FIGURES = {
  cpu: { label: 'CPU per request', ratio: 'cpu' },
  rps: { label: 'req/s', ratio: 'rps' },
  p99: { label: 'p99', ratio: 'p99' },
  peakRss: { label: 'peak RSS', ratio: 'peakRss' },
  peakRssMb: { label: 'peak RSS (MB)', own: 'peakRssMb' },
  tokenFetches: { label: 'token fetches by the product per token lifetime', own: 'tokenFetches' },
};

const HOLDS = { '≤': (x, v) => x <= v, '≥': (x, v) => x >= v, '=': (x, v) => x === v };

/**
 * Each target whose scenario ran, checked: `{ scenario, target, against, measured, verdict }`,
 * `measured` the figures (one per scenario the row names; ratios to `against` when it names a
 * candidate), `verdict` 'met', 'NOT met' or why it was not measured.
 *
 * @param results the run's `{ scenario, summary, ratios }`, one per scenario
 * @param unmeasured `(result) => string | undefined`: why a scenario's figures do not measure what it
 *   is meant to (a DPoP scenario whose tokens were Bearer), or nothing
 * @param productRuns how the product ran (howProductRuns): only the `runs` rows that match are checked
 */
export function checkTargets(results, unmeasured, productRuns) {
  const checked = [];
  for (const { scenario, figure, against, runs, bound, value } of TARGETS) {
    if (runs !== undefined && runs !== productRuns) continue;
    const { label, ratio, own } = FIGURES[figure];
    const ran = scenario === '*' ? results : results.filter((r) => r.scenario.name === scenario);
    if (ran.length === 0) continue;
    const measured = ran.map((r) => (against ? r.ratios[against]?.[ratio] : r.summary[PRODUCT][own]));
    // A scenario that did not measure its feature leaves its own rows unmeasured, not every scenario's.
    const why =
      (scenario === '*' ? undefined : ran.map(unmeasured).find(Boolean)) ?? (measured.every(Number.isFinite) ? undefined : 'not measured');
    checked.push({
      scenario: scenario === '*' ? 'every scenario' : scenario,
      target: against
        ? `${label} ${bound} ${value.toFixed(Number.isInteger(value * 10) ? 1 : 2)}× ${against}`
        : `${label} ${bound} ${value}${runs ? ` ${runs}` : ''}`,
      against,
      measured,
      verdict: why ?? (measured.every((x) => HOLDS[bound](x, value)) ? 'met' : 'NOT met'),
    });
  }
  return checked;
}
