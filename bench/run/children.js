// The processes a run starts: candidates, upstreams and load generators, each pinned to its
// processor under BENCH_PIN=1, stopped at the end of its scenario and killed if the run ends first.
import { spawn } from 'node:child_process';
import { root } from '../processes.js';

/**
 * BENCH_PIN=1: the proxies on one processor, the load generator and the upstream on the other
 * (`taskset`), so that a candidate does not share its processor with the load it is measured under.
 */
export const PINNED_TO = { proxies: '1', load: '0' };

/**
 * The run's child processes.
 *
 * @param options `{ pin, nodeFlags, env }`: whether to pin, node flags for every node process, and
 *   the environment every child starts from
 */
export function createChildren({ pin, nodeFlags, env }) {
  const running = new Set();

  /** The command and its arguments, under `taskset` when pinned. `role`: 'proxy' or 'load'. */
  function pinned(role, command, args) {
    return pin ? ['taskset', ['-c', role === 'load' ? PINNED_TO.load : PINNED_TO.proxies, command, ...args]] : [command, args];
  }

  function track(child) {
    running.add(child);
    child.once('exit', () => running.delete(child));
    return child;
  }

  /** Spawns a program (nginx, say) with `role`'s pinning. */
  function start(role, command, args, options) {
    return track(spawn(...pinned(role, command, args), options));
  }

  /**
   * Starts a node process and resolves `{ name, child, pid, output() }` once it is ready: a line on
   * its stdout (`ready <port>` by default), or `ready()` resolving. `role: 'load'` pins it beside
   * the load generator (the upstream), else beside the proxies.
   */
  function startNode(name, args, { role = 'proxy', env: extraEnv = {}, readyLine = /^ready /m, ready } = {}) {
    const child = start(role, process.execPath, [...nodeFlags, ...args], {
      cwd: root,
      env: { ...env, NODE_OPTIONS: '', ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const collect = (chunk) => {
      if (output.length < 64 * 1024) output += chunk;
    };
    child.stdout.setEncoding('utf8').on('data', collect);
    child.stderr.setEncoding('utf8').on('data', collect);
    return new Promise((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`${name} did not start within 20 s:\n${output}`)), 20_000);
      child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it was ready:\n${output}`)));
      const done = () => {
        clearTimeout(deadline);
        resolve({ name, child, pid: child.pid, output: () => output });
      };
      if (ready) ready().then(done, reject);
      else child.stdout.on('data', () => readyLine.test(output) && done());
    });
  }

  /** Runs a program to its end beside the load (a load generator) and resolves its stdout. */
  function run(command, args) {
    return new Promise((resolve, reject) => {
      const child = start('load', command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
      child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
      child.once('error', reject);
      child.once('exit', (code) => {
        if (code === 0) resolve(stdout);
        else reject(new Error(`${command} exited ${code}: ${stderr || stdout}`));
      });
    });
  }

  /** SIGTERM, then SIGKILL after 10 s: a candidate that hung (http-proxy has, under get-1m) cannot hang the run. */
  async function stop({ child }) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(kill);
  }

  /** Kills every child still running: the run is ending. */
  function killAll() {
    for (const child of running) child.kill('SIGKILL');
  }

  return { start, startNode, run, stop, killAll };
}

/** Resolves once `url` answers 200, polling every 50 ms until `deadlineMs`. */
export async function pollOk(url, deadlineMs = 20_000, headers = {}) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      const response = await fetch(url, { headers });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`${url} did not answer 200 within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
