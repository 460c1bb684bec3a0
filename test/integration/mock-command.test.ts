import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { codeSpans, readDoc, rowsOf, section } from '../helpers/docs.js';
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

  it("agrees with the README: the variables it exports are the first deployment's, its check example exits as the README promises", async () => {
    const mock = spawn(process.execPath, [MOCK_MAIN], {
      env: { PATH: process.env.PATH, MOCK_PORT: '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    mock.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => mock.on('exit', (code) => resolve(code)));
    try {
      await pollUntil(() => out.includes('Ctrl-C'), { timeoutMs: 15_000 });
      const url = /Mock Ticket Service at (\S+)/.exec(out)![1]!;
      const readme = readDoc('README.md');
      // The README's example, pointed at this mock's port.
      const example = /`export (BASE_URL=\S+ CLIENT_ID=\S+ CLIENT_SECRET=\S+)`, then\s+`node dist\/main\.js check`/.exec(readme);
      expect(example, 'the README shows the check example').not.toBeNull();
      const env = Object.fromEntries(example![1]!.split(' ').map((pair) => pair.split('=') as [string, string]));
      env.BASE_URL = url;
      const named = rowsOf(section(readme, 'A first deployment'), 'env').flatMap((row) => [...codeSpans(row[0]!), ...codeSpans(row[1]!)]);
      for (const variable of Object.keys(env)) expect(named, `${variable} in the first-deployment table`).toContain(variable);
      // "exits 0; or exits 1 with the reason ..., 2 for bad configuration"
      const row = readme.split('\n').find((l) => l.startsWith('| `ticket-auth-proxy check'))!;
      const bad = Number(/, (\d) for bad configuration/.exec(row)?.[1]);
      expect(bad).toBe(2);
      const ok = await runCli(['check'], env);
      expect(ok.code, ok.stderr).toBe(0);
      const missing = join(mkdtempSync(join(tmpdir(), 'tap-readme-')), 'no-such-dir', 'proxy.sock');
      const wrongs: Record<string, string>[] = [{ LISTEN_PORT: '99999' }, { TOKEN_REFRESH_RATIO: '2' }, { LISTEN_SOCKET: missing }];
      for (const wrong of wrongs) {
        const res = await runCli(['check'], { ...env, ...wrong });
        expect(res.code, JSON.stringify(wrong)).toBe(bad);
        expect(res.stderr).toContain(Object.keys(wrong)[0]);
      }
      // The issuer the README says the mock is.
      for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) expect(readme).toContain(path);
      const issuer = await runCli(['check'], { ...env, ISSUER_URL: url });
      expect(issuer.code, issuer.stderr).toBe(0);
      expect(issuer.stdout).toContain(`token endpoint: ${url}/api/v1/oauth2/token (from ${url}/.well-known/oauth-authorization-server)`);
    } finally {
      mock.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });

  it('prints its usage for --help and exits 0, and refuses an unknown argument with exit 2, starting nothing', () => {
    const run = (args: string[]) =>
      spawnSync(process.execPath, [MOCK_MAIN, ...args], {
        env: { PATH: process.env.PATH, MOCK_PORT: '0' },
        encoding: 'utf8',
        timeout: 15_000,
      });
    for (const flag of ['--help', '-h']) {
      const help = run([flag]);
      expect(help.status, flag).toBe(0);
      expect(help.stdout).toMatch(/^Usage: npm run mock/);
      for (const setting of ['MOCK_HOST', 'MOCK_PORT', 'MOCK_TOKEN_TTL_S']) expect(help.stdout).toContain(`  ${setting} `);
      expect(help.stdout).not.toContain('Mock Ticket Service at');
      expect(help.stderr).toBe('');
    }
    const unknown = run(['--port', '9080']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toBe(
      'mock: unknown argument "--port": it takes its settings from the environment (MOCK_PORT=9080 npm run mock); see --help\n',
    );
    expect(unknown.stdout).toBe('');
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
