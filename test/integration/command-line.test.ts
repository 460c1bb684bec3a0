import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { SETTINGS_CHECKS } from '../../src/app/settings-checks.js';
import { SETTINGS } from '../../src/config/config.js';
import { runCli } from '../helpers/index.js';
import { sharedStack } from '../helpers/stack.js';

/** docs/configuration.md, where the messages of check and of the start are quoted. */
const CONFIGURATION_DOC = () => readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8').replace(/\n/g, ' ');

const SECRET = 'proc-secret-77aa';

/** Ports free at this moment, from the system (listen on port 0, then close). */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Server>((resolve) => {
          const s = createServer().listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}
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

  it('check prints the scope granted, and what of TOKEN_SCOPE was left out', async ({ shared: { gateway } }) => {
    const env = { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET, TOKEN_SCOPE: 'tickets.read tickets.write' };
    const asked = await runCli(['check'], env);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain('scope granted: tickets.read tickets.write\n');
    // An identity provider may grant less than asked (RFC 6749 §3.3), and then must say which.
    gateway.setTokenFault({
      status: 200,
      body: { access_token: 'narrow-token-9q', token_type: 'Bearer', expires_in: 60, scope: 'tickets.read' },
    });
    const narrowed = await runCli(['check'], env);
    expect(narrowed.code).toBe(0);
    expect(narrowed.stdout).toContain('scope granted: tickets.read; TOKEN_SCOPE also asked for tickets.write, not granted\n');
    expect(narrowed.stdout).not.toContain('narrow-token-9q');
    // No scope in the answer, none printed.
    const none = await runCli(['check'], { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET });
    expect(none.stdout).not.toContain('scope');
  });

  it('warns of a comma in TOKEN_SCOPE at start and in check, naming the space-separated form; the mock refuses it invalid_scope', async ({
    shared: { gateway },
    stack,
  }) => {
    const scope = 'tickets.read,tickets.write';
    const warning =
      'TOKEN_SCOPE holds a comma (got "tickets.read,tickets.write"): scopes are separated by spaces (RFC 6749 §3.3), so the identity ' +
      'provider reads "tickets.read,tickets.write" as one scope; for several, write TOKEN_SCOPE="tickets.read tickets.write"';
    const check = await runCli(['check'], { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET, TOKEN_SCOPE: scope });
    expect(check.code).toBe(1);
    expect(check.stderr).toContain(`ticket-auth-proxy: warning: ${warning}\n`);
    expect(check.stderr).toContain('token endpoint answered 400 invalid_scope');
    expect(check.stderr).toContain('check TOKEN_SCOPE');
    const { proxy } = await stack({ gateway, secret: SECRET, env: { TOKEN_SCOPE: scope }, ready: false });
    expect(CONFIGURATION_DOC()).toContain(warning);
    const line = await proxy.waitForLog((l) => l.level === 40 && l.msg === warning, 5000);
    expect(line).toMatchObject({ setting: 'TOKEN_SCOPE' });
  });

  it('check exits 1 for a MEMORY_LIMIT_MB the idle proxy is already over the shedding line of, naming it and the idle figure', async ({
    shared: { gateway },
  }) => {
    const env = { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET };
    const small = await runCli(['check'], { ...env, MEMORY_LIMIT_MB: '10' });
    expect(small.code).toBe(1);
    expect(small.stdout).toContain('ok: token obtained');
    expect(small.stderr).toMatch(
      /^ticket-auth-proxy: MEMORY_LIMIT_MB=10 is below what the idle proxy holds, about \d+ MB \(this check, which loads the same code, holds that now\): above 90 % of the limit every new request is answered 503 overloaded while \/readyz stays 200; raise it \(the chart gives 192 MB; docs\/performance.md\), or set MEMORY_LIMIT_MB=0 to turn shedding off\n$/m,
    );
    expect(CONFIGURATION_DOC()).toContain('`MEMORY_LIMIT_MB=10 is below what the idle proxy holds, about 72 MB ...`');
    for (const fine of ['4096', '0']) {
      const res = await runCli(['check'], { ...env, MEMORY_LIMIT_MB: fine });
      expect(res.code, fine).toBe(0);
      expect(res.stderr, fine).not.toContain('MEMORY_LIMIT_MB');
    }
  });

  it('check says whether the listeners can be opened, and only warns when a running proxy holds them', async ({ shared }) => {
    const env = { BASE_URL: shared.gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET };
    const [listen, admin] = await freePorts(2);
    const free = await runCli(['check'], { ...env, LISTEN_PORT: String(listen), ADMIN_PORT: String(admin) });
    expect(free.code).toBe(0);
    expect(free.stdout).toContain(`listeners: 127.0.0.1:${listen} and 0.0.0.0:${admin} can be opened\n`);
    expect(free.stderr).toBe('');
    // With a Unix socket for the proxy listener, the socket (made there and removed again) and the admin port.
    const dir = mkdtempSync(join(tmpdir(), 'tap-check-socket-'));
    const socket = await runCli(['check'], { ...env, LISTEN_SOCKET: join(dir, 'proxy.sock'), ADMIN_PORT: String(admin) });
    expect(socket.code).toBe(0);
    expect(socket.stdout).toContain(`listeners: socket ${join(dir, 'proxy.sock')} and 0.0.0.0:${admin} can be opened\n`);
    expect(socket.stderr).toBe('');
    expect(existsSync(join(dir, 'proxy.sock'))).toBe(false);
    // The shared stack's proxy holds both of its own ports.
    const { proxyPort, adminPort } = shared.proxy;
    const held = await runCli(['check'], {
      ...env,
      LISTEN_PORT: String(proxyPort),
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
    });
    expect(held.code).toBe(0);
    expect(held.stdout).toContain('ok: token obtained');
    expect(held.stdout).not.toContain('listeners:');
    const running = 'another process holds the port; a proxy running with these settings holds it, as it should';
    expect(held.stderr).toContain(
      `ticket-auth-proxy: warning: the proxy listener (LISTEN_HOST, LISTEN_PORT) cannot listen on 127.0.0.1:${proxyPort} (EADDRINUSE) now: ${running}\n`,
    );
    expect(held.stderr).toContain(
      `ticket-auth-proxy: warning: the admin listener (ADMIN_HOST, ADMIN_PORT) cannot listen on 127.0.0.1:${adminPort} (EADDRINUSE) now: ${running}\n`,
    );
  });

  it('check fails as the start does, in its words, on a listener that cannot be opened for another reason than being in use', async ({
    shared: { gateway },
  }) => {
    // 192.0.2.1 (RFC 5737, TEST-NET-1) is no address of this host.
    const env = {
      BASE_URL: gateway.url,
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      LISTEN_HOST: '192.0.2.1',
      LISTEN_PORT: '8180',
      ADMIN_PORT: '0',
    };
    const [start, check] = await Promise.all([runCli([], env), runCli(['check'], env)]);
    expect(start.code).toBe(1);
    const refusal = 'the proxy listener (LISTEN_HOST, LISTEN_PORT) cannot listen on 192.0.2.1:8180 (EADDRNOTAVAIL)';
    expect(start.stderr).toBe(`ticket-auth-proxy: ${refusal}\n`);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('ok: token obtained');
    expect(check.stderr).toBe(`ticket-auth-proxy: ${refusal}: this host has no such address\n`);
    // One port for both listeners: refused as configuration, before any port is opened, by both.
    const [port] = await freePorts(1);
    for (const adminHost of ['127.0.0.1', '0.0.0.0', '::']) {
      const same = { ...env, LISTEN_HOST: '127.0.0.1', LISTEN_PORT: String(port), ADMIN_HOST: adminHost, ADMIN_PORT: String(port) };
      const [sameStart, sameCheck] = await Promise.all([runCli([], same), runCli(['check'], same)]);
      const clash =
        `LISTEN_PORT and ADMIN_PORT are both ${port} on addresses that overlap (LISTEN_HOST 127.0.0.1, ADMIN_HOST ${adminHost}): ` +
        'the two listeners cannot share a port; give ADMIN_PORT another';
      expect(sameStart.code).toBe(2);
      expect(sameStart.stderr).toContain(clash);
      expect(sameCheck.code).toBe(2);
      expect(sameCheck.stderr).toBe(sameStart.stderr);
      expect(sameStart.stdout).not.toContain('listeners up');
    }
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

  describe('check refuses every configuration the start refuses, with the same message and status', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-refusals-'));
    mkdirSync(join(dir, 'a-directory'));
    writeFileSync(join(dir, 'a-file'), 'x');
    symlinkSync(join(dir, 'elsewhere.sock'), join(dir, 'a-link'));
    const refusalEnv = (gateway: { url: string }): Record<string, string> => ({
      BASE_URL: gateway.url,
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      ADMIN_PORT: '0',
    });
    /** One bad configuration for each feature's settings check, the loader, the file, and each refusal at the socket's path. */
    const cases: { what: string; env?: Record<string, string>; args?: string[] }[] = [
      { what: 'loader', env: { LOG_LEVEL: 'chatty' } },
      { what: 'tls', env: { CA_FILE: join(dir, 'no-such-ca.pem') } },
      { what: 'token', env: { CLIENT_SECRET_FILE: join(dir, 'a-file') } },
      { what: 'dpop', env: { DPOP_ALG: 'ES256' } },
      { what: 'issuer', env: { ISSUER_URL: 'https://idp.example.com', TOKEN_URL: 'https://idp.example.com/token' } },
      { what: 'store', env: { TOKEN_STORE_PREFIX: 'tap' } },
      { what: 'listener', env: { LISTEN_SOCKET: join(dir, 'p.sock'), LISTEN_PORT: '0' } },
      { what: 'tracing', env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } },
      { what: 'file', args: ['--config', join(dir, 'no-such.yaml')] },
      { what: 'socket directory missing', env: { LISTEN_SOCKET: join(dir, 'no-such-dir', 'p.sock') } },
      { what: 'socket path a directory', env: { LISTEN_SOCKET: join(dir, 'a-directory') } },
      { what: 'socket path a file', env: { LISTEN_SOCKET: join(dir, 'a-file') } },
      { what: 'socket path a link', env: { LISTEN_SOCKET: join(dir, 'a-link') } },
    ];

    it('has a case for every feature’s settings check', () => {
      for (const name of Object.keys(SETTINGS_CHECKS)) expect(cases.map((c) => c.what)).toContain(name);
    });

    // A case each: each runs the start and check, two processes, as a user would.
    it.for(cases)('$what', async (c, { shared }) => {
      const caseEnv = { ...refusalEnv(shared.gateway), ...c.env };
      const [start, check] = await Promise.all([runCli(c.args ?? [], caseEnv), runCli(['check', ...(c.args ?? [])], caseEnv)]);
      expect(start.code, c.what).toBe(2);
      expect(start.stderr, c.what).toMatch(/^ticket-auth-proxy: invalid configuration \(\d problems?\):\n {2}- /);
      expect(check.code, c.what).toBe(2);
      expect(check.stderr, c.what).toBe(start.stderr);
      expect(check.stdout, c.what).not.toContain('ok: token obtained');
    });

    it('leaves nothing at the refused paths, quotes the refusal of a missing directory as docs/unix-socket.md does, and passes a socket no process answers on', async ({
      shared,
    }) => {
      const env = refusalEnv(shared.gateway);
      // docs/unix-socket.md quotes the refusal of a missing directory as the proxy gives it.
      const row = readFileSync(new URL('../../docs/unix-socket.md', import.meta.url), 'utf8')
        .split('\n')
        .find((l) => l.startsWith('| a directory that does not exist'))!;
      const quoted = /`(LISTEN_SOCKET … cannot be made: its directory … does not exist)`/.exec(row)?.[1];
      expect(quoted, row).toBeDefined();
      const missingDir = join(dir, 'no-such-dir');
      expect((await runCli([], { ...env, LISTEN_SOCKET: join(missingDir, 'p.sock') })).stderr).toContain(
        quoted!.replace('LISTEN_SOCKET …', `LISTEN_SOCKET ${join(missingDir, 'p.sock')}`).replace('directory …', `directory ${missingDir}`),
      );
      // Nothing was left at the refused paths (the link's target above), and a socket no process
      // answers on (a killed proxy's leftover) passes check.
      expect((await runCli([], { ...env, LISTEN_SOCKET: join(dir, 'a-link') })).code).toBe(2);
      expect(existsSync(join(dir, 'elsewhere.sock'))).toBe(false);
      const leftover = createServer().listen(join(dir, 'live.sock'));
      await new Promise((resolve) => leftover.once('listening', resolve));
      linkSync(join(dir, 'live.sock'), join(dir, 'stale.sock'));
      await new Promise((resolve) => leftover.close(resolve));
      expect(existsSync(join(dir, 'stale.sock'))).toBe(true);
      const stale = await runCli(['check'], { ...env, LISTEN_SOCKET: join(dir, 'stale.sock') });
      expect(stale.code, stale.stderr).toBe(0);
      expect(stale.stderr).toBe('');
      expect(stale.stdout).toMatch(
        new RegExp(
          `^listeners: socket ${join(dir, 'stale.sock')} \\(a socket no process answers on is there, a stopped proxy's: the start replaces it\\) and 0\\.0\\.0\\.0:\\d+ can be opened$`,
          'm',
        ),
      );
    });
  });

  it('check only warns when a process answers on LISTEN_SOCKET, which the start refuses', async ({ shared }) => {
    const env = { BASE_URL: shared.gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET, ADMIN_PORT: '0' };
    const path = join(mkdtempSync(join(tmpdir(), 'tap-in-use-')), 'p.sock');
    const holder = createServer().listen(path);
    await new Promise((resolve) => holder.once('listening', resolve));
    try {
      const [start, check] = await Promise.all([
        runCli([], { ...env, LISTEN_SOCKET: path }),
        runCli(['check'], { ...env, LISTEN_SOCKET: path }),
      ]);
      const refusal = `LISTEN_SOCKET ${path} is in use: another process answers on it; stop that process or choose another path`;
      expect(start.code).toBe(2);
      expect(start.stderr).toContain(`  - ${refusal}\n`);
      expect(check.code).toBe(0);
      expect(check.stdout).toContain('ok: token obtained');
      expect(check.stderr).toBe(`ticket-auth-proxy: warning: ${refusal}; a proxy running with these settings holds it, as it should\n`);
      expect(CONFIGURATION_DOC()).toContain(
        `warning: ${refusal.replace(path, '/run/tap/proxy.sock')}; a proxy running with these settings holds it, as it should`,
      );
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('refuses an unresolved YAML tag or alias in the file at start and in check, naming the key, never the value, and prints nothing of the file', async ({
    shared: { gateway },
  }) => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-yaml-tags-'));
    const head = `baseUrl: ${gateway.url}\nclientId: client\n`;
    const files: Record<string, [string, string]> = {
      tag: [`${head}clientSecret: !vault ${SECRET}\n`, `clientSecret in ${join(dir, 'tag.yaml')} (CLIENT_SECRET), line 3: a YAML tag`],
      alias: [`${head}clientSecret: *${SECRET}\n`, `clientSecret in ${join(dir, 'alias.yaml')} (CLIENT_SECRET), line 3: an alias`],
      // A YAML 1.1 type is a tag this reading does not resolve: the secret base64-decoded would be used otherwise.
      binary: [
        `${head}clientSecret: !!binary ${Buffer.from(SECRET).toString('base64')}\n`,
        `clientSecret in ${join(dir, 'binary.yaml')} (CLIENT_SECRET), line 3: a YAML tag`,
      ],
      // The library's warning for an unknown directive quotes the line; here the proxy's warning names the line only.
      directive: [
        `%SECRETS ${SECRET}\n---\n${head}clientSecret: !vault x\n`,
        `clientSecret in ${join(dir, 'directive.yaml')} (CLIENT_SECRET), line 5: a YAML tag`,
      ],
    };
    for (const [name, [text, refusal]] of Object.entries(files)) {
      const file = join(dir, `${name}.yaml`);
      writeFileSync(file, text);
      // The library's own debugging variables, set, would print every token of the file.
      const env = { LOG_TOKENS: '1', LOG_STREAM: '1' };
      const [start, check] = await Promise.all([runCli(['--config', file], env), runCli(['check', '--config', file], env)]);
      for (const [what, res] of [
        ['start', start],
        ['check', check],
      ] as const) {
        expect(res.code, `${name} ${what}: ${res.stderr}`).toBe(2);
        expect(res.stderr, `${name} ${what}`).toContain(`  - ${refusal}`);
        expect(res.stdout + res.stderr, `${name} ${what}`).not.toContain(SECRET);
        expect(res.stdout + res.stderr, `${name} ${what}`).not.toContain('vault');
      }
      expect(check.stderr).toBe(start.stderr);
    }
    expect((await runCli(['--config', join(dir, 'directive.yaml')], {})).stderr).toMatch(
      /^ticket-auth-proxy: warning: \S+directive\.yaml, line 1, column 1: a directive \(a line beginning with "%"\) that YAML does not know/,
    );
  });

  it('reports every problem at once: what is at LISTEN_SOCKET beside a conflict of settings, and the warnings beside the errors', async ({
    shared: { gateway },
  }) => {
    const env = { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET };
    const missingDir = join(mkdtempSync(join(tmpdir(), 'tap-at-once-')), 'no-such-dir');
    const pair = { ...env, LISTEN_SOCKET: join(missingDir, 'p.sock'), LISTEN_PORT: '8180', TOKEN_SCOPE: 'tickets.read,tickets.write' };
    const [start, check] = await Promise.all([runCli([], pair), runCli(['check'], pair)]);
    expect(start.code).toBe(2);
    expect(start.stderr).toMatch(
      /^ticket-auth-proxy: warning: TOKEN_SCOPE holds a comma .*\nticket-auth-proxy: invalid configuration \(2 problems\):\n/,
    );
    expect(start.stderr).toContain('  - LISTEN_SOCKET and LISTEN_PORT are both set');
    expect(start.stderr).toContain(
      `  - LISTEN_SOCKET ${join(missingDir, 'p.sock')} cannot be made: its directory ${missingDir} does not exist\n`,
    );
    expect(check.code).toBe(2);
    expect(check.stderr).toBe(start.stderr);
    expect(start.stdout + check.stdout).toBe('');
  });

  it('refuses a relative LISTEN_SOCKET at start and in check, naming the setting', async ({ shared: { gateway } }) => {
    const env = { BASE_URL: gateway.url, CLIENT_ID: 'client', CLIENT_SECRET: SECRET, LISTEN_SOCKET: 'no-such-dir-here/proxy.sock' };
    const [start, check] = await Promise.all([runCli([], env), runCli(['check'], env)]);
    const refusal =
      'LISTEN_SOCKET must be an absolute path, such as /run/ticket-auth-proxy/proxy.sock (got "no-such-dir-here/proxy.sock"): ' +
      'a relative one depends on the directory the proxy is started in';
    expect(start.code).toBe(2);
    expect(start.stderr).toBe(`ticket-auth-proxy: invalid configuration (1 problem):\n  - ${refusal}\n`);
    expect(check.code).toBe(2);
    expect(check.stderr).toBe(start.stderr);
  });

  it('runs client_assertion_file beside a token store without TOKEN_STORE_KEY_FILE, saying once its tokens are not shared, as docs/token-store.md says', async ({
    shared: { gateway },
    stack,
  }) => {
    const row = readFileSync(new URL('../../docs/token-store.md', import.meta.url), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('| `TOKEN_STORE_KEY_FILE` |'))!;
    expect(row).not.toMatch(/required/);
    expect(row).toContain('without it they run, each proxy fetching its own, and say so once at start');
    const dir = mkdtempSync(join(tmpdir(), 'tap-assertion-'));
    const jwt = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from('{"iss":"k8s"}').toString('base64url')}.c2ln`;
    writeFileSync(join(dir, 'token'), jwt);
    const { proxy } = await stack({
      gateway,
      credentials: false,
      ready: false,
      env: {
        CLIENT_ID: 'app',
        TOKEN_AUTH_METHOD: 'client_assertion_file',
        CLIENT_ASSERTION_FILE: join(dir, 'token'),
        TOKEN_STORE_URL: 'redis://127.0.0.1:1',
      },
    });
    const line = await proxy.waitForLog((l) => l.msg === 'the token store is not used for this credential', 5000);
    expect(String(line.reason)).toContain('set TOKEN_STORE_KEY_FILE to share its tokens');
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
    // No configured credential, so no token of its own to alert on (TicketAuthProxyNoValidToken).
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    expect(metrics).toContain('ticket_auth_proxy_token_fetches_total');
    expect(metrics).not.toContain('ticket_auth_proxy_token_expiry_timestamp_seconds');
    expect(metrics).not.toContain('ticket_auth_proxy_token_consecutive_failures');
  });

  it('accepts the commented example configuration as it ships, with its secret file in place', () => {
    const text = readFileSync(new URL('../../config/ticket-auth-proxy.example.yaml', import.meta.url), 'utf8');
    // Every setting has a key in the example, set or commented out.
    for (const key of SETTINGS.filter((setting) => !setting.envOnly).map((setting) => setting.key)) {
      expect(text, key).toMatch(new RegExp(`^#? ?${key}:`, 'm'));
    }
  });
});
