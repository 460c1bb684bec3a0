/**
 * A real egress proxy for the tests: Debian's tinyproxy (scripts/test-tools.sh), started in the
 * foreground on a loopback port with a generated configuration, logging to a file the tests read.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, pollUntil } from './index.js';

export interface Tinyproxy {
  url: string;
  port: number;
  /** tinyproxy's own log so far. */
  log(): string;
  /** How many requests tinyproxy logged that match `pattern` (e.g. `CONNECT 127.0.0.1:1234`). */
  count(pattern: string): number;
  stop(): Promise<void>;
}

/** Starts tinyproxy; `basicAuth` demands those credentials, `extra` adds configuration lines. */
export async function startTinyproxy(
  options: { basicAuth?: { user: string; password: string }; extra?: string[] } = {},
): Promise<Tinyproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'tap-tinyproxy-'));
  chmodSync(dir, 0o777); // tinyproxy started as root runs as nobody and still writes its log here
  const port = await freePort();
  const logFile = join(dir, 'tinyproxy.log');
  writeFileSync(logFile, '');
  chmodSync(logFile, 0o666);
  const conf = [
    ...(process.getuid?.() === 0 ? ['User nobody', 'Group nogroup'] : []),
    `Port ${port}`,
    'Listen 127.0.0.1',
    'Timeout 30',
    `LogFile "${logFile}"`,
    'LogLevel Connect',
    'MaxClients 50',
    'Allow 127.0.0.1',
    'DisableViaHeader Yes',
    ...(options.basicAuth ? [`BasicAuth ${options.basicAuth.user} ${options.basicAuth.password}`] : []),
    ...(options.extra ?? []),
  ].join('\n');
  const confFile = join(dir, 'tinyproxy.conf');
  writeFileSync(confFile, `${conf}\n`);
  chmodSync(confFile, 0o644);
  const child: ChildProcess = spawn('tinyproxy', ['-d', '-c', confFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  try {
    await pollUntil(
      () =>
        new Promise<boolean>((resolve) => {
          if (child.exitCode !== null) throw new Error(`tinyproxy exited: ${stderr}`);
          const s = connect(port, '127.0.0.1');
          s.once('connect', () => (s.destroy(), resolve(true)));
          s.once('error', () => resolve(false));
        }),
      { timeoutMs: 10_000 },
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`tinyproxy did not start: ${(err as Error).message}; ${stderr}`, { cause: err });
  }
  const log = (): string => readFileSync(logFile, 'utf8');
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log,
    count: (pattern) =>
      log()
        .split('\n')
        .filter((l) => l.includes(pattern)).length,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
