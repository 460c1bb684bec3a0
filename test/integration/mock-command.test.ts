import { spawn, spawnSync } from 'node:child_process';
import { describe, expect } from 'vitest';
import { pollUntil, runCli } from '../helpers/index.js';
import { test as it } from '../helpers/stack.js';

const MOCK_MAIN = new URL('../../dist/mock/main.js', import.meta.url).pathname;

describe('npm run mock', () => {
  it('prints its URL and the lines that point a proxy at it, and check succeeds with those lines', async () => {
    const mock = spawn(process.execPath, [MOCK_MAIN], {
      env: { PATH: process.env.PATH, MOCK_PORT: '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    mock.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => mock.on('exit', (code) => resolve(code)));
    try {
      await pollUntil(() => out.includes('Ctrl-C'), { timeoutMs: 15_000 });
      const exported = /export (.+)/.exec(out)![1]!;
      const env = Object.fromEntries(exported.split(' ').map((pair) => pair.split('=') as [string, string]));
      expect(Object.keys(env)).toEqual(['BASE_URL', 'CLIENT_ID', 'CLIENT_SECRET']);
      expect(out).toContain(`Mock Ticket Service at ${env.BASE_URL}`);
      const result = await runCli(['check'], env);
      expect(result.stderr).toBe('');
      expect(result.stdout).toContain(`ok: token obtained from ${env.BASE_URL}/api/v1/oauth2/token`);
      expect(result.code).toBe(0);
    } finally {
      mock.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });

  it('says which port is taken and how to choose another', async ({ stack }) => {
    // A running stack holds the mock's port.
    const { gateway } = await stack();
    const result = spawnSync(process.execPath, [MOCK_MAIN], {
      env: { PATH: process.env.PATH, MOCK_PORT: String(gateway.port) },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${gateway.port} (EADDRINUSE); choose another port with MOCK_PORT`);
  });
});
