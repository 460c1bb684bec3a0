import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { SETTINGS } from '../../src/config/config.js';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { runCli } from '../helpers/index.js';
import { sharedStack } from '../helpers/stack.js';

const SECRET = 'names-secret-41zz';
const DEFAULT_PORT = SETTINGS.find((s) => s.env === 'LISTEN_PORT')!.default;
// One mock for the file (its proxy unused but for the leak check); each test starts its own proxy against it.
const it = sharedStack({ secret: SECRET, mock: { tokenTtlS: 900 } });
let gateway: MockTicketService;
it.beforeAll(({ shared }) => {
  gateway = shared.gateway;
});

describe('a variable that resembles a setting', () => {
  it('is named back in a warning at start, and the proxy listens where the settings say, on the default port', async ({ stack }) => {
    // LISTEN_PORT empty is as if unset: the proxy takes its default, and the slip LISTEN_PROT is ignored.
    const { proxy } = await stack({
      gateway,
      secret: SECRET,
      env: { LISTEN_PORT: '', LISTEN_PROT: '9180', PORT_ADMIN: '9181' },
      ready: false,
    });
    const warnings = proxy.lines().filter((l) => l.level === 40 && typeof l.variable === 'string');
    expect(warnings).toEqual([
      expect.objectContaining({
        variable: 'LISTEN_PROT',
        setting: 'LISTEN_PORT',
        msg: 'LISTEN_PROT is not a setting and is ignored; did you mean LISTEN_PORT?',
      }),
      expect.objectContaining({
        variable: 'PORT_ADMIN',
        setting: 'ADMIN_PORT',
        msg: 'PORT_ADMIN is not a setting and is ignored; did you mean ADMIN_PORT?',
      }),
    ]);
    expect(proxy.proxyPort).toBe(DEFAULT_PORT);
    expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(proxy.output()).not.toContain('9180');
  });

  it('gives no warning for the variables every container holds', async ({ stack }) => {
    const { proxy } = await stack({
      gateway,
      secret: SECRET,
      ready: false,
      env: {
        HOME: '/home/app',
        HOSTNAME: 'pod-1',
        KUBERNETES_SERVICE_HOST: '10.0.0.1',
        KUBERNETES_SERVICE_PORT: '443',
        NODE_ENV: 'production',
        npm_config_listen_port: '1',
      },
    });
    expect(proxy.lines().filter((l) => l.level === 40 && typeof l.variable === 'string')).toEqual([]);
  });

  it('is named by check as well, which still fetches its token', async () => {
    const res = await runCli(['check'], {
      BASE_URL: gateway.url,
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      CLIENT_SECERT_FILE: '/run/secret',
    });
    expect(res.code).toBe(0);
    expect(res.stderr).toContain('warning: CLIENT_SECERT_FILE is not a setting and is ignored; did you mean CLIENT_SECRET_FILE?');
    expect(res.stdout).toMatch(/^ok: token obtained/m);
    expect(res.stdout + res.stderr).not.toContain(SECRET);
  });

  it('is named beside the problems when the configuration is refused', async () => {
    const res = await runCli([], { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECERT: SECRET });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('warning: CLIENT_SECERT is not a setting and is ignored; did you mean CLIENT_SECRET?');
    expect(res.stderr).toContain('CLIENT_SECRET_FILE (or CLIENT_SECRET) is required');
    expect(res.stdout + res.stderr).not.toContain(SECRET);
  });
});

describe('a file key that is not a setting', () => {
  it('is refused, naming the nearest key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-names-'));
    const file = join(dir, 'proxy.yaml');
    writeFileSync(file, `baseUrl: ${gateway.url}\nclientId: client\nlisten_port: 9180\n`);
    const res = await runCli(['check', '--config', file], { CLIENT_SECRET: SECRET });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`listen_port in ${file} is not a setting; did you mean listenPort?`);
  });
});

describe('two sources of the client secret', () => {
  it('are refused, saying where each came from', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-names-'));
    const file = join(dir, 'proxy.yaml');
    const secretFile = join(dir, 'client-secret');
    writeFileSync(secretFile, `${SECRET}\n`);
    writeFileSync(file, `baseUrl: ${gateway.url}\nclientId: client\nclientSecretFile: ${secretFile}\n`);
    const res = await runCli(['--config', file], { CLIENT_SECRET: 'demo-secret' });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(
      `CLIENT_SECRET and CLIENT_SECRET_FILE are both set (CLIENT_SECRET from the environment, CLIENT_SECRET_FILE from clientSecretFile in ${file})`,
    );
    expect(res.stdout + res.stderr).not.toContain('demo-secret');
    expect(res.stdout + res.stderr).not.toContain(SECRET);
  });
});
