/**
 * `npm run demo` starts the mock and the proxy in one process of its own, so this file starts
 * that process rather than the stack fixture.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { pollUntil } from '../helpers/index.js';

describe('npm run demo', () => {
  it('starts the mock and the proxy, prints the curl line, serves the ticket list and stops on Ctrl-C', async () => {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const demo = spawn(process.execPath, [new URL('../../dist/demo.js', import.meta.url).pathname], {
      env: { PATH: process.env.PATH, LISTEN_PORT: String(port), ADMIN_PORT: String(port + 1) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    demo.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => demo.on('exit', (code) => resolve(code)));
    try {
      await pollUntil(() => out.includes('curl -s'), { timeoutMs: 15_000 });
      const line = /curl -s (http:\S+)/.exec(out)![1]!;
      expect(line).toBe(`http://127.0.0.1:${port}/api/v1/tickets`);
      const res = await fetch(line);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { tickets: unknown[] }).tickets.length).toBeGreaterThan(0);
    } finally {
      demo.kill('SIGINT');
    }
    expect(await exited).toBe(0);
    expect(out).toContain('shutdown complete');
    expect(out).not.toContain('demo-secret');
    // Started as the image starts it: the first line is the proxy's, not the advice to pass --expose-gc.
    const first = JSON.parse(out.split('\n')[0]!) as { msg: string };
    expect(first.msg).not.toContain('--expose-gc');
    expect(out).not.toContain('started without --expose-gc');
  });

  it('shows a comma-separated TOKEN_SCOPE for what it is: a warning, and the mock refusing the one unknown scope', async () => {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const demo = spawn(process.execPath, [new URL('../../dist/demo.js', import.meta.url).pathname], {
      env: { PATH: process.env.PATH, LISTEN_PORT: String(port), ADMIN_PORT: String(port + 1), TOKEN_SCOPE: 'tickets.read,tickets.write' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    demo.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => demo.on('exit', (code) => resolve(code)));
    try {
      await pollUntil(() => out.includes('invalid_scope'), { timeoutMs: 15_000 });
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; hint?: string });
      expect(
        lines.some(
          (l) => l.msg.startsWith('TOKEN_SCOPE holds a comma') && l.msg.endsWith('write TOKEN_SCOPE="tickets.read tickets.write"'),
        ),
      ).toBe(true);
      expect(out).toContain('unknown scope \\"tickets.read,tickets.write\\"');
      expect(out).not.toContain('curl -s');
    } finally {
      demo.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });

  it('installs with npm ci without an install script left unreviewed: package.json allows or refuses each the lockfile has', () => {
    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      allowScripts?: Record<string, boolean>;
    };
    const withScripts = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.length).toBeGreaterThan(0);
    for (const name of withScripts) expect(Object.keys(pkg.allowScripts ?? {}), name).toContain(name);
  });

  it('says how to choose other ports when the proxy port is taken, before starting anything', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const result = spawnSync(process.execPath, [new URL('../../dist/demo.js', import.meta.url).pathname], {
        env: { PATH: process.env.PATH, LISTEN_PORT: String(port), ADMIN_PORT: String(port + 1) },
        encoding: 'utf8',
        timeout: 15_000,
      });
      expect(result.status).toBe(1);
      expect(result.stderr).toContain(`demo: the proxy listener (LISTEN_PORT) cannot listen on 127.0.0.1:${port} (EADDRINUSE)\n`);
      const way = /^demo: choose other ports: LISTEN_PORT=(\d+) ADMIN_PORT=(\d+) npm run demo$/m.exec(result.stderr);
      expect(way, result.stderr).not.toBeNull();
      expect(Number(way![2])).toBe(Number(way![1]) + 1);
      expect(Number(way![1])).not.toBe(port);
      // Nothing was started: no mock URL, no proxy output.
      expect(result.stdout).toBe('');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
