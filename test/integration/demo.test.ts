/**
 * `npm run demo` starts the mock and the proxy in one process of its own, so this file starts
 * that process rather than the stack fixture.
 */
import { spawn, spawnSync } from 'node:child_process';
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
