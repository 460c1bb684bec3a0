import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMockTicketService, type MockTicketService } from '../../src/mock/ticket-service.js';
import { SETTINGS } from '../../src/config/config.js';
import { pollUntil, runCli, startProxy } from '../helpers/index.js';

const SECRET = 'proc-secret-77aa';
let gateway: MockTicketService;

beforeAll(async () => {
  gateway = await createMockTicketService({ clients: { client: SECRET }, tokenTtlS: 900 });
});
afterAll(async () => {
  await gateway?.close();
});

describe('command line (PRODUCT §2)', () => {
  it('prints its version and help', async () => {
    const version = await runCli(['--version'], {});
    expect(version.code).toBe(0);
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(version.stdout.trim()).toBe(pkg.version);
    const help = await runCli(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('check');
    expect(help.stdout).toContain('CLIENT_SECRET_FILE');
  });

  it('check fetches one token and prints its lifetime, never the token', async () => {
    const before = gateway.issuedTokens().length;
    const res = await runCli(['check'], { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/lifetime 900 s/);
    const tokens = gateway.issuedTokens();
    expect(tokens.length).toBe(before + 1);
    expect(res.stdout + res.stderr).not.toContain(tokens.at(-1)!);
    expect(res.stdout + res.stderr).not.toContain(SECRET);
  });

  it('check exits non-zero with the reason when the client is rejected or the endpoint unreachable', async () => {
    const rejected = await runCli(['check'], { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: 'wrong-secret-x1' });
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toMatch(/rejected/);
    expect(rejected.stderr).toMatch(/invalid_client/);
    expect(rejected.stderr).not.toContain('wrong-secret-x1');
    const unreachable = await runCli(['check'], { BASE_URL: 'http://127.0.0.1:9', CLIENT_ID: 'c', CLIENT_SECRET: 's' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/network_error/);
  });

  it('reports every configuration problem at once, naming each setting, and opens no port', async () => {
    const res = await runCli([], {
      BASE_URL: 'http://tickets.example.com',
      CLIENT_SECRET: 'leaky-secret-value',
      CLIENT_SECRET_FILE: '/nonexistent',
      TOKEN_REFRESH_RATIO: '2',
      LISTEN_PORT: '99999',
      LOG_LEVEL: 'chatty',
    });
    expect(res.code).toBe(2);
    for (const name of ['BASE_URL', 'CLIENT_ID', 'CLIENT_SECRET_FILE', 'TOKEN_REFRESH_RATIO', 'LISTEN_PORT', 'LOG_LEVEL']) {
      expect(res.stderr).toContain(name);
    }
    expect(res.stderr).not.toContain('leaky-secret-value');
    expect(res.stdout).not.toContain('listeners up');
  });

  it('reads settings from a YAML file given with --config, the environment overriding it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-config-'));
    const file = join(dir, 'proxy.yaml');
    writeFileSync(file, `baseUrl: ${gateway.url}\nclientId: client\nclientSecret: ${SECRET}\ntokenDefaultTtlS: 120\nlogLevel: warn\n`);
    const ok = await runCli(['check', '--config', file], {});
    expect(ok.code).toBe(0);
    const overridden = await runCli(['check', '--config', file], { CLIENT_SECRET: 'env-wins-secret' });
    expect(overridden.code).toBe(1);
    writeFileSync(file, 'baseUrl: [unclosed\n');
    const broken = await runCli(['--config', file], {});
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(file);
  });

  it('warns when the proxy listener is bound to a non-loopback address', async () => {
    const proxy = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET, LISTEN_HOST: '0.0.0.0' });
    try {
      const line = await proxy.waitForLog((l) => l.level === 40 && String(l.msg).includes('not on loopback'), 5000);
      expect(line).toMatchObject({ host: '0.0.0.0' });
    } finally {
      await proxy.stop();
    }
  });

  it('is ready at once with only pass-through credentials, and answers a request without Basic credentials 401 credentials_required', async () => {
    const proxy = await startProxy({ BASE_URL: gateway.url, PASSTHROUGH_BASIC: 'true' });
    try {
      expect((await fetch(`${proxy.adminUrl}/readyz`)).status).toBe(200);
      const res = await fetch(`${proxy.proxyUrl}/api/v1/tickets`);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'credentials_required' });
      expect(proxy.lines().some((l) => l.level === 40 && String(l.msg).includes('PASSTHROUGH_BASIC'))).toBe(false);
    } finally {
      await proxy.stop();
    }
  });

  it('accepts the commented example configuration as it ships, with its secret file in place', () => {
    const text = readFileSync(new URL('../../config/ticket-auth-proxy.example.yaml', import.meta.url), 'utf8');
    // Every setting has a key in the example, set or commented out.
    for (const key of SETTINGS.filter((setting) => !setting.envOnly).map((setting) => setting.key)) {
      expect(text, key).toMatch(new RegExp(`^#? ?${key}:`, 'm'));
    }
  });
});

describe('npm run demo (PRODUCT §2)', () => {
  it('starts the mock and the proxy, prints the curl line, serves the ticket list and stops on Ctrl-C', async () => {
    const { spawn } = await import('node:child_process');
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
});

describe('npm run mock (issue 12)', () => {
  it('prints its URL and the lines that point a proxy at it, and check succeeds with those lines', async () => {
    const { spawn } = await import('node:child_process');
    const mock = spawn(process.execPath, [new URL('../../dist/mock/main.js', import.meta.url).pathname], {
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

  it('says which port is taken and how to choose another', async () => {
    const { spawnSync } = await import('node:child_process');
    const result = spawnSync(process.execPath, [new URL('../../dist/mock/main.js', import.meta.url).pathname], {
      env: { PATH: process.env.PATH, MOCK_PORT: String(gateway.port) },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${gateway.port} (EADDRINUSE); choose another port with MOCK_PORT`);
  });
});

describe('admin listener (PRODUCT §8)', () => {
  it('serves /livez, /readyz and every contract metric on its own port', async () => {
    const proxy = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET });
    try {
      expect((await fetch(`${proxy.adminUrl}/livez`)).status).toBe(200);
      await pollUntil(async () => (await fetch(`${proxy.adminUrl}/readyz`)).status === 200, { timeoutMs: 10_000 });
      await fetch(`${proxy.proxyUrl}/api/v1/tickets`);
      const res = await fetch(`${proxy.adminUrl}/metrics`);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await res.text();
      for (const name of [
        'ticket_auth_proxy_token_fetches_total',
        'ticket_auth_proxy_token_fetch_duration_seconds',
        'ticket_auth_proxy_token_expiry_timestamp_seconds',
        'ticket_auth_proxy_token_last_success_timestamp_seconds',
        'ticket_auth_proxy_token_consecutive_failures',
        'ticket_auth_proxy_requests_total',
        'ticket_auth_proxy_request_duration_seconds',
        'ticket_auth_proxy_upstream_unauthorized_total',
        'ticket_auth_proxy_token_cache_entries',
        'process_cpu_seconds_total',
        'nodejs_eventloop_lag_seconds',
      ]) {
        expect(text).toContain(`# TYPE ${name} `);
      }
      expect(text).toMatch(/ticket_auth_proxy_token_fetches_total\{outcome="success"\} 1/);
      expect(text).not.toContain('client');
      expect(text).not.toContain(SECRET);
      // Admin requests are not counted as proxied requests.
      expect(text).toMatch(/ticket_auth_proxy_requests_total\{method="GET",code="200"\} 1\n/);
      expect((await fetch(`${proxy.adminUrl}/nothing`)).status).toBe(404);
    } finally {
      await proxy.stop();
    }
  });
});

describe('shutdown (PRODUCT §10)', () => {
  it('turns unready at once, keeps serving through the delay, lets an in-flight request finish and exits 0', async () => {
    // A port outside the ephemeral range, so no other process of the suite can take it over once closed.
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const proxy = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET, SHUTDOWN_DELAY_S: '1', LISTEN_PORT: String(port) });
    await pollUntil(async () => (await fetch(`${proxy.adminUrl}/readyz`)).status === 200, { timeoutMs: 10_000 });
    const inflight = fetch(`${proxy.proxyUrl}/api/v1/slow?ms=1500`).then(async (r) => ({ status: r.status, text: await r.text() }));
    await pollUntil(() => gateway.apiRequests.some((r) => r.url.includes('/slow')), { timeoutMs: 5000 });
    proxy.child.kill('SIGTERM');
    await proxy.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('shutdown started'), 5000);
    const readyz = await fetch(`${proxy.adminUrl}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toMatchObject({ reason: 'shutting down' });
    expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    await proxy.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('listeners closed'), 5000);
    const refused = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.on('connect', () => (s.destroy(), resolve(false)));
      s.on('error', () => resolve(true));
    });
    expect(refused).toBe(true);
    expect(await inflight).toMatchObject({ status: 200 });
    expect(await proxy.waitForExit(10_000)).toMatchObject({ code: 0 });
  });

  it('exits 1 when the drain times out', async () => {
    const proxy = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET, SHUTDOWN_TIMEOUT_S: '0.5' });
    await pollUntil(async () => (await fetch(`${proxy.adminUrl}/readyz`)).status === 200, { timeoutMs: 10_000 });
    const hanging = fetch(`${proxy.proxyUrl}/api/v1/hang`).catch((e: Error) => e);
    await pollUntil(() => gateway.apiRequests.some((r) => r.url.endsWith('/hang') && !r.aborted), { timeoutMs: 5000 });
    proxy.child.kill('SIGTERM');
    expect(await proxy.waitForExit(10_000)).toMatchObject({ code: 1 });
    expect(await hanging).toBeInstanceOf(Error);
  });

  it('exits at once with status 1 on a second signal', async () => {
    const proxy = await startProxy({ BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET, SHUTDOWN_DELAY_S: '30' });
    proxy.child.kill('SIGTERM');
    await proxy.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('shutdown started'), 5000);
    proxy.child.kill('SIGINT');
    expect(await proxy.waitForExit(5000)).toMatchObject({ code: 1 });
  });
});
