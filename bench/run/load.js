// The load generators: wrk (one thread), or autocannon in a process of its own
// (bench/load-autocannon.js). Each run resolves { requests, rps, p50Ms, p99Ms, errors }. wrk
// cannot connect to a Unix socket: a scenario with one (`socket`) is loaded by autocannon alone,
// every candidate of it alike, so that its ratios compare the proxies and not two load generators.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../processes.js';

/** A wrk duration (`812.00us`, `1.20ms`, `2.01s`, `1.00m`) in milliseconds; NaN when it is none. */
function wrkDuration(text) {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!match) return NaN;
  const scale = { us: 1e-3, ms: 1, s: 1e3, m: 60e3 }[match[2]];
  return Number(match[1]) * scale;
}

/** The figures of wrk's report (run with --latency). */
function parseWrk(out) {
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests: Number(/(\d+) requests in/.exec(out)?.[1]),
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50Ms: wrkDuration(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    p99Ms: wrkDuration(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    errors: non2xx + (socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0),
  };
}

/**
 * The load generator BENCH_LOAD names, as `load(url, scenario, seconds, socketPath?)`; autocannon
 * for a scenario over a Unix socket.
 *
 * @param options `{ tool, children, workDir }`: 'wrk' or 'autocannon', the run's processes
 *   (children.js), and a directory for wrk's request scripts
 */
export function createLoad({ tool, children, workDir }) {
  async function wrk(url, scenario, seconds) {
    const args = ['-t1', `-c${scenario.connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s'];
    if (scenario.method === 'POST') {
      const script = join(workDir, `post-${scenario.bodyBytes}.lua`);
      writeFileSync(
        script,
        `wrk.method = "POST"\nwrk.body = string.rep("x", ${scenario.bodyBytes})\nwrk.headers["Content-Type"] = "application/octet-stream"\n`,
      );
      args.push('-s', script);
    }
    if (scenario.basic) args.push('-H', `Authorization: Basic ${Buffer.from(scenario.basic).toString('base64')}`);
    return parseWrk(await children.run('wrk', [...args, url]));
  }

  async function autocannon(url, scenario, seconds, socketPath) {
    const { method, connections, bodyBytes, basic } = scenario;
    const request = JSON.stringify({ url, socketPath, seconds, method, connections, bodyBytes, basic });
    return JSON.parse(await children.run(process.execPath, [join(root, 'bench/load-autocannon.js'), request]));
  }

  return (url, scenario, seconds, socketPath) =>
    tool === 'wrk' && !scenario.socket ? wrk(url, scenario, seconds) : autocannon(url, scenario, seconds, socketPath);
}
