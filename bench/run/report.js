// The run's report: a Markdown page on stdout (tables per scenario, the DPoP scenarios against the
// Bearer path, the targets) and every round's figures as JSON in bench/results/. bench/README.md
// ("Reading it") says how each column is measured.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { imageNodeOptions, root } from '../processes.js';
import { BEARER, BEFORE, PRODUCT, TCP, UNTRACED } from './candidates.js';
import { PINNED_TO } from './children.js';
import { checkTargets, howProductRuns } from './targets.js';

function fmt(value, digits = 0) {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

/** The settings a reader needs to compare two runs, in one sentence. */
function describeRun(machine, settings) {
  const { rounds, durationS, warmupS, nodeFlags, pin, beforeMain, beforeEnv, productNodeOptions, productAllocator } = settings;
  const beforeWith = Object.entries(beforeEnv).map(([name, value]) => `${name}=${value}`);
  return (
    `${machine.cpu} × ${machine.cores}, ${machine.memGiB} GiB, Node ${machine.node}, load: ${machine.load}, upstream: ${machine.upstream}, ` +
    `${rounds} rounds × ${durationS} s after ${warmupS} s warm-up${nodeFlags.length ? `, node ${nodeFlags.join(' ')}` : ''}; ` +
    (pin ? `the proxies pinned to processor ${PINNED_TO.proxies}, the load and the upstream to ${PINNED_TO.load}; ` : '') +
    (beforeMain
      ? `"${BEFORE}" is ${beforeMain}, run as the product is${beforeWith.length ? ` but with ${beforeWith.join(' ')}` : ''}; `
      : '') +
    `the product with NODE_OPTIONS=${productNodeOptions ? `"${productNodeOptions}"` : '(none)'} and ${productAllocator.description}`
  );
}

/** One scenario: each candidate's figures, the product's ratios to each, and what the scenario counts besides. */
function scenarioSection({ scenario, summary, ratios }) {
  const body = scenario.bodyBytes ? ` (${scenario.bodyBytes / 1024} KB body)` : '';
  const lines = [`## ${scenario.name}: ${scenario.method} ${scenario.path}${body}, ${scenario.connections} connections`, ''];
  lines.push('| candidate | req/s | p50 ms | p99 ms | CPU µs/req | peak RSS MB | errors |', '|---|--:|--:|--:|--:|--:|--:|');
  for (const [name, s] of Object.entries(summary)) {
    lines.push(
      `| ${name} | ${fmt(s.rps)} | ${fmt(s.p50Ms, 2)} | ${fmt(s.p99Ms, 2)} | ${fmt(s.cpuUsPerRequest, 1)} | ${fmt(s.peakRssMb)} | ${s.errors} |`,
    );
  }
  for (const [name, s] of Object.entries(summary)) {
    if (s.exitedInRound !== undefined)
      lines.push('', `**${name}'s process exited during round ${s.exitedInRound}**: its figures are of the rounds before.`);
    if (s.stalledRounds)
      lines.push(
        '',
        `**${name} answered no request in ${s.stalledRounds} of ${s.rounds.length} rounds**: it stopped serving; its figures are of the rounds it served.`,
      );
  }
  lines.push('', '| product / | CPU per request | CPU: geometric mean (95 % interval) | req/s | p99 | peak RSS | CPU ratio per round |');
  lines.push('|---|--:|--:|--:|--:|--:|---|');
  for (const [other, r] of Object.entries(ratios)) {
    const interval = `${fmt(r.cpuInterval.mean, 2)} (${fmt(r.cpuInterval.low, 2)}-${fmt(r.cpuInterval.high, 2)})`;
    const spread =
      r.cpuSpread.length > 12
        ? `${r.cpuSpread.length} rounds, ${fmt(Math.min(...r.cpuSpread), 2)}-${fmt(Math.max(...r.cpuSpread), 2)}`
        : r.cpuSpread.map((x) => fmt(x, 2)).join(' ');
    lines.push(`| ${other} | ${fmt(r.cpu, 2)} | ${interval} | ${fmt(r.rps, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.peakRss, 2)} | ${spread} |`);
  }
  const before = summary[BEFORE] ? `; by the build before it: ${summary[BEFORE].tokenFetches}` : '';
  lines.push('', `Token fetches by the product during the scenario: ${summary[PRODUCT].tokenFetches}${before} (one token lifetime).`, '');
  if (scenario.dpop) lines.push(dpopBinding(summary[PRODUCT].dpop), '');
  if (scenario.socket) {
    lines.push(
      `The product on a Unix socket (LISTEN_SOCKET), \`${TCP}\` the same build on 127.0.0.1; both loaded by autocannon in its own process ` +
        '(wrk cannot connect to a socket), so its figures compare with each other, not with the scenarios wrk loaded.',
      '',
    );
  }
  if (scenario.tracing) lines.push(tracingExport(summary[PRODUCT].tracing), '');
  if (scenario.tls) {
    const counts = Object.entries(summary).map(([n, s]) => `${n} ${s.tlsHandshakes} for ${s.requests} requests`);
    lines.push(`TLS handshakes at the upstream (load: ${scenario.connections} connections): ${counts.join('; ')}.`, '');
  }
  return lines;
}

/**
 * Why a scenario's figures are not its feature's: a DPoP scenario whose token endpoint issued
 * Bearer tokens, so no proof was signed; a tracing scenario whose collector received fewer spans
 * than two a request (the spans were dropped, or never made).
 */
function unmeasured({ scenario, summary }) {
  if (scenario.dpop && summary[PRODUCT].dpop.withProof === 0) return 'not measured, the tokens were Bearer';
  if (scenario.tracing && !everyRequestTraced(summary[PRODUCT].tracing)) return 'not measured, not every request was traced and exported';
  return undefined;
}

/**
 * Whether every request the product forwarded made its two spans (server and client), and at
 * least 99 % of them reached the collector: the rest were dropped and counted, the queue full
 * while an export was out (a busy machine can hold up the collector's answer for longer than the
 * queue lasts at this rate), and were made but not encoded or sent. The requests still in flight
 * when the load stopped at each round's end are within the 1 %.
 */
function everyRequestTraced({ requests, spans, dropped, malformed }) {
  return malformed === 0 && spans + dropped >= 2 * requests * 0.99 && dropped <= 0.01 * (spans + dropped);
}

/** What the collector received from the product, against the requests it forwarded. */
function tracingExport(tracing) {
  const { requests, spans, exports, bytes, dropped, malformed } = tracing;
  const seen =
    `The collector received ${spans} spans in ${exports} exports (${fmt(bytes / 2 ** 20, 1)} MiB, ${fmt(bytes / Math.max(spans, 1))} bytes a span) ` +
    `for ${requests} requests the product forwarded, ${fmt(spans / Math.max(requests, 1), 2)} a request; ` +
    `${dropped} dropped (${fmt((100 * dropped) / Math.max(spans + dropped, 1), 2)} %)` +
    (malformed ? `; **${malformed} exports it could not read**` : '');
  return everyRequestTraced(tracing)
    ? `${seen}: every request was traced (\`${UNTRACED}\`: the same build with tracing off).`
    : `${seen}: **not every request was traced and exported**, so these figures are not the cost of tracing every request.`;
}

/** Whether the product's tokens were DPoP-bound: the upstream counted the proofs it received. */
function dpopBinding({ requests, withProof, dpopScheme }) {
  const seen = `The upstream received ${withProof} requests with a DPoP proof and ${dpopScheme} with \`Authorization: DPoP\`, of ${requests} the product forwarded`;
  if (withProof === 0)
    return `${seen}: **the token endpoint issued Bearer tokens, so no proof was signed**; these figures are the Bearer path's with DPOP=on, not DPoP's cost.`;
  // The upstream also counts the requests still in flight when the load generator stopped, which
  // the load generator does not: more proofs than requests is every request.
  return `${seen}${withProof >= requests && dpopScheme >= requests ? '' : ' (**not all of them**)'}: the tokens were DPoP-bound.`;
}

/** The DPoP scenarios against the Bearer path: the product with DPoP off in the same rounds, and get-1k's product. */
function dpopSection(results) {
  const dpopResults = results.filter((r) => r.scenario.dpop);
  if (dpopResults.length === 0) return [];
  const lines = ['## DPoP against the Bearer path', ''];
  const bearerGet1k = results.find((r) => r.scenario.name === 'get-1k')?.summary[PRODUCT].cpuUsPerRequest;
  for (const result of dpopResults) {
    const { scenario, summary, ratios } = result;
    const product = summary[PRODUCT];
    const toBearer = ratios[BEARER];
    const key = scenario.dpop === 'ES256' ? ', the default generated key' : '';
    lines.push(`- ${scenario.name} (${scenario.dpop}${key}): CPU per request ${fmt(product.cpuUsPerRequest, 1)} µs`);
    lines.push(
      `  - against the product with DPoP off in the same rounds (${fmt(summary[BEARER].cpuUsPerRequest, 1)} µs): ${fmt(toBearer.cpu, 2)}×`,
    );
    if (bearerGet1k !== undefined)
      lines.push(
        `  - against get-1k's product (Bearer) in this run (${fmt(bearerGet1k, 1)} µs): ${fmt(product.cpuUsPerRequest / bearerGet1k, 2)}×`,
      );
    lines.push(
      `  - peak RSS ${fmt(product.peakRssMb)} MB, ${fmt(toBearer.peakRss, 2)}× the product with DPoP off; req/s ${fmt(toBearer.rps, 2)}×, p99 ${fmt(toBearer.p99, 2)}×`,
    );
    if (unmeasured(result)) lines.push('  - **the tokens were Bearer: no proof was signed**');
  }
  lines.push('');
  return lines;
}

/** The targets (targets.js) of the scenarios that ran, each checked. */
function targetsSection(targets) {
  if (targets.length === 0) return [];
  const lines = ['## Targets', ''];
  for (const { scenario, target, against, measured, verdict } of targets) {
    const figures = measured.map((x) => (against ? `${fmt(x, 2)}×` : fmt(x))).join(', ');
    lines.push(`- ${scenario}: ${target}: ${figures} (${verdict})`);
  }
  lines.push('');
  return lines;
}

/**
 * The run as Markdown, and the JSON of every round, written to bench/results/bench-<time>.json.
 * Resolves the Markdown and the file's path.
 *
 * @param results one `{ scenario, summary, ratios }` per scenario, in the order run
 * @param machine `{ cpu, cores, memGiB, node, load, upstream }`
 * @param settings the run's settings (settings.js)
 */
export function writeReport(results, machine, settings) {
  const targets = checkTargets(results, unmeasured, howProductRuns(settings, imageNodeOptions()));
  const lines = ['# ticket-auth-proxy benchmark', '', describeRun(machine, settings), ''];
  for (const result of results) lines.push(...scenarioSection(result));
  lines.push(...dpopSection(results), ...targetsSection(targets));

  const dir = join(root, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  const { durationS, rounds, warmupS, pin, nodeFlags, productNodeOptions, productAllocator, beforeMain } = settings;
  const recorded = {
    durationS,
    rounds,
    warmupS,
    pinned: pin,
    nodeFlags,
    productNodeOptions,
    productAllocator: productAllocator.description,
    before: beforeMain,
  };
  writeFileSync(file, JSON.stringify({ machine, settings: recorded, results, targets }, null, 2) + '\n');
  return { markdown: lines.join('\n'), file };
}
