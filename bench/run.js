// `npm run bench`: what the proxy costs per request, beside two baselines, in one run.
//
// For each scenario (run/scenarios.js) it starts the candidates (run/candidates.js) against an
// upstream (run/upstreams.js) and the mock token endpoint, loads each in turn over interleaved
// rounds (run/rounds.js), reduces the rounds to medians and ratios (run/statistics.js), and
// reports them with the targets (run/report.js, run/targets.js). Settings: `node bench/run.js
// --help` (run/settings.js); how to read the report: bench/README.md.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createMockTicketService } from '../dist/mock/ticket-service.js';
import { CLIENT_SECRET, PRODUCT, clientIds, startCandidates } from './run/candidates.js';
import { startCollector } from './run/collector.js';
import { createChildren } from './run/children.js';
import { createLoad } from './run/load.js';
import { createProcReader } from './run/proc.js';
import { writeReport } from './run/report.js';
import { runRounds } from './run/rounds.js';
import { SCENARIOS } from './run/scenarios.js';
import { readSettings, settingsHelp, thisHost } from './run/settings.js';
import { compare, summarizeRounds } from './run/statistics.js';
import { startTlsUpstream, startUpstream } from './run/upstreams.js';

/**
 * One scenario, on fresh candidates: its rounds, each candidate's summary, and the product's
 * ratios to each other candidate (in the order the scenario lists them).
 */
async function measureScenario(scenario, run) {
  const upstream = scenario.tls ? await run.tlsUpstream() : run.upstream;
  const collector = scenario.tracing ? await run.collector() : undefined;
  const candidates = await startCandidates(scenario, { ...run, upstream, collector });
  try {
    const dpopBefore = scenario.dpop ? await upstream.dpopCounts() : undefined;
    const spansBefore = collector?.counts();
    const measured = await runRounds(scenario, candidates, { ...run, upstream });
    const summary = {};
    for (const { name, pid, tokenFetches } of candidates) {
      const exitedInRound = measured.exitedIn[name];
      summary[name] = {
        ...summarizeRounds(measured.rounds[name]),
        peakRssMb: exitedInRound === undefined ? run.proc.peakRssMb(pid) : NaN,
        exitedInRound,
        ...(scenario.tls ? { tlsHandshakes: measured.handshakes[name], requests: measured.requests[name] } : {}),
        rounds: measured.rounds[name],
        ...(tokenFetches ? { tokenFetches: tokenFetches() } : {}),
      };
    }
    if (dpopBefore) {
      // Only the product with DPoP on sends proofs: the upstream's counts are its requests.
      const after = await upstream.dpopCounts();
      const [withProof, dpopScheme] = [after.withProof - dpopBefore.withProof, after.dpopScheme - dpopBefore.dpopScheme];
      summary[PRODUCT].dpop = { requests: measured.requests[PRODUCT], withProof, dpopScheme };
    }
    if (spansBefore) {
      // Only the product traces: what the collector received in the scenario is its export.
      const after = collector.counts();
      const product = candidates.find((c) => c.name === PRODUCT);
      summary[PRODUCT].tracing = {
        requests: measured.requests[PRODUCT],
        spans: after.spans - spansBefore.spans,
        exports: after.exports - spansBefore.exports,
        bytes: after.bytes - spansBefore.bytes,
        malformed: after.malformed - spansBefore.malformed,
        dropped: await spansDropped(product.adminUrl),
      };
    }
    const others = scenario.against.filter((name) => summary[name]);
    const ratios = Object.fromEntries(others.map((name) => [name, compare(summary[PRODUCT], summary[name])]));
    return { scenario, summary, ratios };
  } finally {
    await Promise.all(candidates.map(run.children.stop));
  }
}

/** The product's `ticket_auth_proxy_trace_spans_dropped_total`, from its admin listener. */
async function spansDropped(adminUrl) {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  return Number(/^ticket_auth_proxy_trace_spans_dropped_total (\S+)/m.exec(text)?.[1] ?? NaN);
}

async function main() {
  if (process.argv.includes('--help')) return void process.stdout.write(settingsHelp());
  const started = Date.now();
  const settings = readSettings(process.env, thisHost());
  const workDir = mkdtempSync(join(tmpdir(), 'tap-bench-'));
  chmodSync(workDir, 0o755); // nginx's worker runs as an unprivileged user when the bench runs as root
  const children = createChildren({ pin: settings.pin, nodeFlags: settings.nodeFlags, env: process.env });
  process.on('exit', () => {
    children.killAll();
    rmSync(workDir, { recursive: true, force: true });
  });
  process.on('SIGINT', () => process.exit(130));

  const machine = {
    cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: cpus().length,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.versions.node,
    load: settings.load === 'wrk' ? 'wrk -t1' : 'autocannon (1 worker)',
    upstream: settings.upstream,
  };
  const log = (line) => process.stderr.write(line);
  log(`bench: ${machine.load} against ${settings.upstream}, ${settings.rounds} rounds × ${settings.durationS} s, `);
  log(`scenarios ${settings.scenarios.join(', ')}\n`);

  const upstream = await startUpstream(settings.upstream, { children, workDir });
  let tlsUpstream;
  let collector;
  const tokenService = await createMockTicketService({
    clients: Object.fromEntries(clientIds().map((id) => [id, CLIENT_SECRET])),
    tokenTtlS: 3600,
  });
  const secretFile = join(workDir, 'client-secret');
  writeFileSync(secretFile, `${CLIENT_SECRET}\n`, { mode: 0o600 });
  const run = {
    settings,
    children,
    upstream,
    tlsUpstream: async () => (tlsUpstream ??= await startTlsUpstream({ children, workDir })),
    collector: async () => (collector ??= await startCollector()),
    tokenService,
    secretFile,
    workDir,
    load: createLoad({ tool: settings.load, children, workDir }),
    proc: createProcReader(),
    log,
  };
  const results = [];
  try {
    for (const name of settings.scenarios) results.push(await measureScenario({ name, ...SCENARIOS[name] }, run));
  } finally {
    await upstream.stop();
    await tlsUpstream?.stop();
    await collector?.stop();
    await tokenService.close();
  }
  const { markdown, file } = writeReport(results, machine, settings);
  process.stdout.write(markdown + '\n');
  log(`bench: ${((Date.now() - started) / 1000).toFixed(0)} s; results in ${file}\n`);
}

main().catch((err) => {
  console.error(`bench: ${err.message}`);
  process.exit(1);
});
