import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { SETTINGS } from '../../src/config/config.js';
import { runCli } from '../helpers/index.js';
import { sharedStack } from '../helpers/stack.js';

const SECRET = 'proc-secret-77aa';
// The shared stack's mock answers `check`; its proxy is the one a user would run beside it.
const it = sharedStack({ secret: SECRET, mock: { tokenTtlS: 900 } });

describe('the command line', () => {
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

  it('check fetches one token and prints its lifetime, never the token', async ({ shared: { gateway } }) => {
    const before = gateway.issuedTokens().length;
    const res = await runCli(['check'], { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/lifetime 900 s/);
    const tokens = gateway.issuedTokens();
    expect(tokens.length).toBe(before + 1);
    expect(res.stdout + res.stderr).not.toContain(tokens.at(-1)!);
    expect(res.stdout + res.stderr).not.toContain(SECRET);
  });

  it('check exits non-zero with the reason when the client is rejected or the endpoint unreachable', async ({ shared: { gateway } }) => {
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

  it('says what an endpoint URL may be, and what TOKEN_URL is when unset, for a relative TOKEN_URL and a bare BASE_URL', async () => {
    const res = await runCli(['check'], { BASE_URL: 'tickets.local', TOKEN_URL: '/oauth2/token', CLIENT_ID: 'c', CLIENT_SECRET: 's' });
    expect(res.code).toBe(2);
    const forms = 'https://host[:port][/path], or http:// for a loopback host (for another host with ALLOW_INSECURE_HTTP=true)';
    expect(res.stderr).toContain(`BASE_URL must be an absolute http(s) URL (got "tickets.local"): ${forms}\n`);
    expect(res.stderr).toContain(
      `TOKEN_URL must be an absolute http(s) URL (got "/oauth2/token"): ${forms}; unset, it is {BASE_URL}/api/v1/oauth2/token\n`,
    );
  });

  it('reads settings from a YAML file given with --config, the environment overriding it', async ({ shared: { gateway } }) => {
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

  it('warns when the proxy listener is bound to a non-loopback address', async ({ shared: { gateway }, stack }) => {
    const { proxy } = await stack({ gateway, secret: SECRET, env: { LISTEN_HOST: '0.0.0.0' }, ready: false });
    const line = await proxy.waitForLog((l) => l.level === 40 && String(l.msg).includes('not on loopback'), 5000);
    expect(line).toMatchObject({ host: '0.0.0.0' });
  });

  it('is ready at once with only pass-through credentials, and answers a request without Basic credentials 401 credentials_required', async ({
    shared: { gateway },
    stack,
  }) => {
    const { proxy } = await stack({ gateway, credentials: false, env: { PASSTHROUGH_BASIC: 'true' }, ready: false });
    expect((await fetch(`${proxy.adminUrl}/readyz`)).status).toBe(200);
    const res = await fetch(`${proxy.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: 'credentials_required' });
    expect(proxy.lines().some((l) => l.level === 40 && String(l.msg).includes('PASSTHROUGH_BASIC'))).toBe(false);
  });

  it('accepts the commented example configuration as it ships, with its secret file in place', () => {
    const text = readFileSync(new URL('../../config/ticket-auth-proxy.example.yaml', import.meta.url), 'utf8');
    // Every setting has a key in the example, set or commented out.
    for (const key of SETTINGS.filter((setting) => !setting.envOnly).map((setting) => setting.key)) {
      expect(text, key).toMatch(new RegExp(`^#? ?${key}:`, 'm'));
    }
  });
});
