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

  it('shows a comma-separated TOKEN_SCOPE for what it is: a warning, the mock refusing the one unknown scope, and still the banner, saying what is wrong', async () => {
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
      // The banner, with the curl line, once the first fetch has failed, and what is wrong in the proxy's words.
      await pollUntil(() => out.includes('Ctrl-C stops both'), { timeoutMs: 15_000 });
      expect(out).toContain(`  curl -s http://127.0.0.1:${port}/api/v1/tickets\n`);
      expect(out).toMatch(
        /^The proxy holds no token yet: token endpoint answered 400 invalid_scope: unknown scope "tickets\.read,tickets\.write".*; check TOKEN_SCOPE: .*\.$/m,
      );
      expect(out).toContain('Until it gets one, the curl line is answered 503 token_unavailable');
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/tickets`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { code: string }).code).toBe('token_unavailable');
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

  it('says which listener to move and with which setting when a port is taken, moving only that one, before starting anything', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const demo = (env: Record<string, string>) =>
      spawnSync(process.execPath, [new URL('../../dist/demo.js', import.meta.url).pathname], {
        env: { PATH: process.env.PATH, ...env },
        encoding: 'utf8',
        timeout: 15_000,
      });
    try {
      const proxyTaken = demo({ LISTEN_PORT: String(port), ADMIN_PORT: String(port + 1) });
      expect(proxyTaken.status).toBe(1);
      expect(proxyTaken.stderr).toContain(
        `demo: the proxy listener (LISTEN_PORT) cannot listen on 127.0.0.1:${port} (EADDRINUSE): port ${port} is taken by another ` +
          'process; move the proxy listener with LISTEN_PORT\n',
      );
      const way = /^demo: for example: LISTEN_PORT=(\d+) ADMIN_PORT=(\d+) npm run demo$/m.exec(proxyTaken.stderr);
      expect(way, proxyTaken.stderr).not.toBeNull();
      expect(Number(way![1])).not.toBe(port);
      // The admin port was free: it stays as given.
      expect(Number(way![2])).toBe(port + 1);
      // Nothing was started: no mock URL, no proxy output.
      expect(proxyTaken.stdout).toBe('');

      // The admin port taken, the proxy port free: the admin listener moves, named by ADMIN_PORT; LISTEN_PORT unset stays so.
      const adminTaken = demo({ ADMIN_PORT: String(port), MOCK_PORT: String(port) });
      expect(adminTaken.status).toBe(1);
      expect(adminTaken.stderr).toContain(
        `demo: the admin listener (ADMIN_PORT) cannot listen on 127.0.0.1:${port} (EADDRINUSE): port ${port} is taken by another ` +
          `process; move the admin listener with ADMIN_PORT; MOCK_PORT is ${port} too: if npm run mock holds it, stop it or give it another MOCK_PORT\n`,
      );
      expect(adminTaken.stderr).toMatch(/^demo: for example: ADMIN_PORT=\d+ npm run demo$/m);
      expect(adminTaken.stderr).not.toContain('LISTEN_PORT');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('says that the two listeners cannot share one port, and moves the admin listener', async () => {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const result = spawnSync(process.execPath, [new URL('../../dist/demo.js', import.meta.url).pathname], {
      env: { PATH: process.env.PATH, LISTEN_PORT: String(port), ADMIN_PORT: String(port) },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      `demo: LISTEN_PORT and ADMIN_PORT are both ${port}: the proxy listener and the admin listener cannot share a port; ` +
        'move the admin listener with ADMIN_PORT\n' +
        `demo: for example: LISTEN_PORT=${port} ADMIN_PORT=${/ADMIN_PORT=(\d+) npm/.exec(result.stderr)?.[1]} npm run demo\n`,
    );
    expect(result.stdout).toBe('');
  });
});
