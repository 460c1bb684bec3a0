/**
 * Integration-test harness: the built proxy started as a user starts it (`node dist/main.js`),
 * as a child process on ports from `listen(0)`, and small tools to talk to it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

export const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export type LogLine = Record<string, unknown> & { msg?: string; level?: number };

export interface ProxyHandle {
  /** The proxy listener's URL; with `LISTEN_SOCKET`, `http://localhost`, to be reached through {@link proxySocket}. */
  proxyUrl: string;
  /** The proxy listener's socket path, with `LISTEN_SOCKET`. */
  proxySocket: string | undefined;
  adminUrl: string;
  proxyPort: number;
  adminPort: number;
  child: ChildProcess;
  /** Everything the process wrote so far, stdout and stderr. */
  output(): string;
  /** Its JSON log lines so far. */
  lines(): LogLine[];
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs: number): Promise<LogLine>;
  waitForExit(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (SIGTERM by default) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const live = new Set<ChildProcess>();
afterAll(() => {
  // Nothing outlives its test file, even when a test failed before its own clean-up.
  for (const child of live) child.kill('SIGKILL');
});

/** A loopback port free at the time of asking (another process may take it before it is used). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A loopback port nothing listens on, below the kernel's ephemeral range
 * (`net.ipv4.ip_local_port_range`): no `listen(0)` elsewhere is given it and no outgoing
 * connection to it connects to itself, so it stays closed until a test listens on it, and a
 * server that goes down there is not replaced by another.
 */
export async function closedPort(): Promise<number> {
  let low = 32_768;
  try {
    low = Number((await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')).trim().split(/\s+/)[0]) || low;
  } catch {
    // Not Linux: the IANA dynamic range starts at 49152, so below 32768 is outside it as well.
  }
  const from = Math.max(1024, low - 12_000);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = from + Math.floor(Math.random() * (low - from));
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free loopback port between ${from} and ${low}`);
}

/** Polls `fn` until it returns true, or rejects at the deadline. */
export async function pollUntil(fn: () => boolean | Promise<boolean>, options: { timeoutMs: number; intervalMs?: number }): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    let ok: boolean;
    try {
      ok = await fn();
    } catch {
      ok = false;
    }
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${options.timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 25));
  }
}

/**
 * Starts `node dist/main.js` with exactly `env` (plus PATH and ephemeral loopback ports, the
 * proxy listener's only without `LISTEN_SOCKET`); with `wrap`, through that command prefix (which
 * must exec node in its place).
 */
export function startProxy(
  env: Record<string, string>,
  options: {
    args?: string[];
    wrap?: string[];
    /** How long the listeners may take to come up; 15 s by default. */ upTimeoutMs?: number;
  } = {},
): Promise<ProxyHandle> {
  const [command, ...prefix] = [...(options.wrap ?? []), process.execPath];
  const child = spawn(command!, [...prefix, MAIN, ...(options.args ?? [])], {
    env: {
      PATH: process.env.PATH,
      ...(env.LISTEN_SOCKET === undefined ? { LISTEN_HOST: '127.0.0.1', LISTEN_PORT: '0' } : {}),
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  let pending = '';
  const parsed: LogLine[] = [];
  const watchers = new Set<() => void>();
  const onData = (chunk: string): void => {
    out += chunk;
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf('\n')) !== -1) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        parsed.push(JSON.parse(line) as LogLine);
      } catch {
        // not a log line
      }
    }
    for (const w of watchers) w();
  };
  child.stdout!.setEncoding('utf8').on('data', onData);
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    out += c;
    for (const w of watchers) w();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
      for (const w of watchers) w();
    });
  });

  const waitForLog = (predicate: (line: LogLine) => boolean, timeoutMs: number): Promise<LogLine> =>
    new Promise((resolve, reject) => {
      let seen = 0;
      const check = (): void => {
        for (; seen < parsed.length; seen++) {
          if (predicate(parsed[seen]!)) {
            done();
            resolve(parsed[seen]!);
            return;
          }
        }
        if (child.exitCode !== null || child.signalCode !== null) {
          done();
          reject(
            new Error(`proxy exited (code ${child.exitCode}, signal ${child.signalCode}) before the expected log line; output:\n${out}`),
          );
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`expected log line not seen within ${timeoutMs} ms; output:\n${out}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        watchers.delete(check);
      };
      watchers.add(check);
      check();
    });

  const waitForExit = (timeoutMs: number) =>
    Promise.race([
      exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`proxy did not exit within ${timeoutMs} ms`)), timeoutMs).unref(),
      ),
    ]);

  return waitForLog((l) => l.msg === 'listeners up', options.upTimeoutMs ?? 15_000).then((up) => {
    const proxy = up.proxy as { port: number; socket?: string };
    const admin = up.admin as { port: number };
    return {
      proxyUrl: proxy.socket === undefined ? `http://127.0.0.1:${proxy.port}` : 'http://localhost',
      proxySocket: proxy.socket,
      adminUrl: `http://127.0.0.1:${admin.port}`,
      proxyPort: proxy.port,
      adminPort: admin.port,
      child,
      output: () => out,
      lines: () => [...parsed],
      waitForLog,
      waitForExit,
      stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        return waitForExit(20_000);
      },
    };
  });
}

/**
 * Runs `node dist/main.js ...args` to completion with exactly `env` (plus PATH). `check` tries the
 * listeners' ports and warns when one is held: on a shared machine 8180 may be, so unless `env`
 * names them, `check` is given port 0 (always free) for both (the admin one beside LISTEN_SOCKET).
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 15_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const ports = !args.includes('check')
    ? {}
    : env.LISTEN_SOCKET === undefined
      ? { LISTEN_PORT: '0', ADMIN_PORT: '0' }
      : { ADMIN_PORT: '0' };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env.PATH, ...ports, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`command did not finish within ${timeoutMs} ms; stdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      live.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A connection to a loopback port, or to a Unix socket's path. */
export function connectTo(target: number | string): Socket {
  return typeof target === 'string' ? connect(target) : connect(target, '127.0.0.1');
}

/**
 * Writes raw bytes on a fresh connection (to a loopback port or a Unix socket's path) and resolves
 * with everything read until the server closes it, or until one complete response (by
 * Content-Length or chunked end) has arrived.
 */
export function rawRequest(target: number | string, raw: string | Buffer, options: { timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connectTo(target);
    let data = Buffer.alloc(0);
    const finish = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(data.toString('latin1'));
    };
    const timer = setTimeout(() => {
      socket.destroy();
      if (data.length > 0) resolve(data.toString('latin1'));
      else reject(new Error(`no answer within ${options.timeoutMs ?? 5000} ms`));
    }, options.timeoutMs ?? 5000);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (completeResponse(data.toString('latin1'))) finish();
    });
    socket.on('end', finish);
    socket.on('error', () => finish());
    socket.write(raw);
  });
}

function completeResponse(text: string): boolean {
  const head = text.indexOf('\r\n\r\n');
  if (head === -1) return false;
  const headers = text.slice(0, head).toLowerCase();
  if (/^http\/1\.1 1\d\d/.test(headers)) return completeResponse(text.slice(head + 4));
  const length = /\r\ncontent-length: *(\d+)/.exec(headers);
  if (length) return text.length - head - 4 >= Number(length[1]);
  if (/\r\ntransfer-encoding: *chunked/.test(headers)) return text.endsWith('\r\n0\r\n\r\n');
  return false;
}

/** The body of a raw response (de-chunked when chunked). */
export function rawBody(response: string): string {
  const head = response.indexOf('\r\n\r\n');
  const body = response.slice(head + 4);
  if (!/\r\ntransfer-encoding: *chunked/i.test(response.slice(0, head))) return body;
  let out = '';
  let rest = body;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, nl), 16);
    if (!size) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
}
