// A scenario's measurement: each candidate warmed up, then rounds in which every candidate takes
// the load in turn, its CPU read from /proc around its share. A candidate whose process exits
// (http-proxy has, under get-1m) is left out of the later rounds and named, rather than ending the
// run.

/**
 * The order of the candidates in a round: turned by one each round, and backwards every other
 * cycle (A B C, B C A, C A B, then the same backwards), so that no candidate always runs first, or
 * always after the same one.
 */
export function roundOrder(candidates, round) {
  const n = candidates.length;
  const turned = candidates.map((_, i) => candidates[(i + round) % n]);
  return Math.floor(round / n) % 2 ? turned.reverse() : turned;
}

/**
 * Runs the warm-up and the rounds of a scenario. Resolves, by candidate name, the figures of each
 * round it ran (`{ round, requests, rps, p50Ms, p99Ms, errors, cpuUsPerRequest }`), the round in
 * which it exited, the requests it served in all, and, over TLS, the upstream's handshakes.
 *
 * @param run `{ settings, load, proc, upstream, log }`: the settings (rounds, durationS, warmupS),
 *   the load generator (load.js), the /proc reader (proc.js), the scenario's upstream (its
 *   `handshakes()` counted when it has one), and where progress lines go
 */
export async function runRounds(scenario, candidates, { settings, load, proc, upstream, log }) {
  const rounds = Object.fromEntries(candidates.map((c) => [c.name, []]));
  const requests = Object.fromEntries(candidates.map((c) => [c.name, 0]));
  const handshakes = Object.fromEntries(candidates.map((c) => [c.name, 0]));
  const exitedIn = {};

  const loadCounted = async (candidate, seconds) => {
    const before = upstream.handshakes ? await upstream.handshakes() : 0;
    const result = await load(candidate.url + scenario.path, scenario, seconds, candidate.socketPath);
    if (upstream.handshakes) handshakes[candidate.name] += (await upstream.handshakes()) - before;
    requests[candidate.name] += result.requests;
    return result;
  };
  const cpuOrExit = (candidate, round) => {
    try {
      return proc.cpuMicros(candidate.pid);
    } catch {
      exitedIn[candidate.name] = round + 1;
      const { exitCode, signalCode } = candidate.child;
      const last = candidate.output().trimEnd().split('\n').slice(-5).join('\n    ');
      log(
        `  ${scenario.name} round ${round + 1} ${candidate.name} has exited (${signalCode ?? `code ${exitCode}`}); left out of the later rounds` +
          (last ? `; its last output:\n    ${last}\n` : '\n'),
      );
      return undefined;
    }
  };

  if (settings.warmupS > 0) for (const candidate of candidates) await loadCounted(candidate, settings.warmupS);
  for (let round = 0; round < settings.rounds; round++) {
    for (const candidate of roundOrder(candidates, round)) {
      if (exitedIn[candidate.name] !== undefined) continue;
      const cpuBefore = cpuOrExit(candidate, round);
      if (cpuBefore === undefined) continue;
      const result = await loadCounted(candidate, settings.durationS);
      if (scenario.drainS) await new Promise((resolve) => setTimeout(resolve, scenario.drainS * 1000));
      const cpuAfter = cpuOrExit(candidate, round);
      if (cpuAfter === undefined) continue;
      const cpuUsPerRequest = (cpuAfter - cpuBefore) / result.requests;
      rounds[candidate.name].push({ round: round + 1, ...result, cpuUsPerRequest });
      log(
        `  ${scenario.name} round ${round + 1} ${candidate.name.padEnd(17)} ${result.rps.toFixed(0).padStart(6)} req/s  ` +
          `${cpuUsPerRequest.toFixed(1).padStart(6)} µs/req  p99 ${result.p99Ms.toFixed(2)} ms  errors ${result.errors}\n`,
      );
    }
  }
  return { rounds, exitedIn, requests, handshakes };
}
