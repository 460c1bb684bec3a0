import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config/config.js';
import { SettingsRefused } from '../../src/config/load.js';
import { helpText, parseArgs } from '../../src/app/cli/cli.js';
import { readConfig, refusalWarnings, type ReadConfigOptions } from '../../src/app/cli/read-config.js';
import { CHECKS } from '../../src/app/settings-checks.js';

describe('parseArgs', () => {
  it.each([
    [[], { command: 'run', configFile: undefined }],
    [['check'], { command: 'check', configFile: undefined }],
    [['--config', 'proxy.yaml'], { command: 'run', configFile: 'proxy.yaml' }],
    [['-c', 'proxy.yaml'], { command: 'run', configFile: 'proxy.yaml' }],
    [['--config=/etc/p.yaml'], { command: 'run', configFile: '/etc/p.yaml' }],
    [['check', '--config', 'proxy.yaml'], { command: 'check', configFile: 'proxy.yaml' }],
    [['--config', 'proxy.yaml', 'check'], { command: 'check', configFile: 'proxy.yaml' }],
    [['--help'], { command: 'help', configFile: undefined }],
    [['-h'], { command: 'help', configFile: undefined }],
    [['--version'], { command: 'version', configFile: undefined }],
    [['-v'], { command: 'version', configFile: undefined }],
    [['--version', '--help'], { command: 'help', configFile: undefined }],
    [['--help', '--version'], { command: 'help', configFile: undefined }],
    [['check', '--help'], { command: 'help', configFile: undefined }],
    [['--help', 'check'], { command: 'help', configFile: undefined }],
    [['--version', 'check'], { command: 'version', configFile: undefined }],
  ])('reads %j', (argv, expected) => {
    expect(parseArgs(argv)).toEqual(expected);
  });

  it.each([
    [['--config'], '--config needs a file name'],
    [['-c', '--help'], '-c needs a file name'],
    [['--config='], '--config needs a file name'],
    [['--port', '80'], 'unknown argument "--port"; see --help'],
    [['run'], 'unknown argument "run"; see --help'],
    [['check', 'check'], 'unknown argument "check"; see --help'],
  ])('refuses %j', (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(message);
  });
});

describe('helpText', () => {
  it('names the version, both commands and every setting with its file key', () => {
    const text = helpText('1.2.3');
    expect(text).toContain('ticket-auth-proxy 1.2.3');
    expect(text).toContain('check [--config FILE]');
    for (const s of SETTINGS) expect(text).toMatch(new RegExp(`${s.env}\\s+${s.envOnly ? '\\(environment only\\)' : s.key}`));
  });

  it('lists no file key for CONFIG_FILE, which a file cannot set', () => {
    expect(helpText('1.2.3')).not.toMatch(/CONFIG_FILE\s+configFile/);
  });

  it('lines up every row of the settings table: each file key and each default starts in one column', () => {
    const text = helpText('1.2.3');
    const rows = SETTINGS.map((s) => text.split('\n').find((line) => line.startsWith(`  ${s.env} `))!);
    expect(rows.every((row) => row !== undefined)).toBe(true);
    const header = text.split('\n').find((line) => /^ {2}ENV +FILE KEY$/.test(line))!;
    const keyColumn = header.indexOf('FILE KEY');
    for (const [i, s] of SETTINGS.entries()) {
      const row = rows[i]!;
      const key = s.envOnly ? '(environment only)' : s.key;
      expect(row.indexOf(key, s.env.length + 2), row).toBe(keyColumn);
      expect(row.slice(2 + s.env.length, keyColumn).trim(), row).toBe('');
    }
    const defaults = rows.filter((row) => row.includes(' default ')).map((row) => row.indexOf(' default ') + 1);
    expect(new Set(defaults).size).toBe(1);
    expect(defaults[0]! - keyColumn).toBeGreaterThan(Math.max(...SETTINGS.map((s) => s.key.length)));
  });
});

describe('readConfig', () => {
  const BASE = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'secret-value' };

  async function refusal(env: Record<string, string>, options?: ReadConfigOptions): Promise<SettingsRefused> {
    const err = await readConfig(undefined, CHECKS, env, options).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SettingsRefused);
    return err as SettingsRefused;
  }

  it("reports what is at LISTEN_SOCKET's path beside the settings' own problems, not after they are fixed", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'tap-read-config-')), 'no-such-dir');
    const path = join(dir, 'p.sock');
    const { problems } = await refusal({ ...BASE, LISTEN_SOCKET: path, LISTEN_PORT: '8180' });
    expect(problems).toEqual([
      'LISTEN_SOCKET and LISTEN_PORT are both set (LISTEN_SOCKET from the environment, LISTEN_PORT from the environment): the proxy ' +
        'listener is a Unix socket (LISTEN_SOCKET) or a TCP address (LISTEN_HOST, LISTEN_PORT), not both; remove LISTEN_PORT',
      `LISTEN_SOCKET ${path} cannot be made: its directory ${dir} does not exist`,
    ]);
    // Alone, the path is refused as configuration all the same, before anything opens.
    expect((await refusal({ ...BASE, LISTEN_SOCKET: path })).problems).toEqual([
      `LISTEN_SOCKET ${path} cannot be made: its directory ${dir} does not exist`,
    ]);
  });

  it('carries the warnings with the problems, so that both are said at once', async () => {
    const err = await refusal({ ...BASE, TOKEN_SCOPE: 'a,b', LOG_LEVEL: 'chatty' });
    expect(err.problems).toEqual([expect.stringMatching(/^LOG_LEVEL must be one of /)]);
    expect(refusalWarnings(err)).toEqual([
      { setting: 'TOKEN_SCOPE', message: expect.stringMatching(/^TOKEN_SCOPE holds a comma/) as string },
    ]);
  });

  it('refuses a socket a process answers on at start, and leaves it to check, which warns', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'tap-read-config-')), 'p.sock');
    const holder = createServer().listen(path);
    await new Promise((resolve) => holder.once('listening', resolve));
    try {
      expect((await refusal({ ...BASE, LISTEN_SOCKET: path })).problems).toEqual([
        `LISTEN_SOCKET ${path} is in use: another process answers on it; stop that process or choose another path`,
      ]);
      const loaded = await readConfig(undefined, CHECKS, { ...BASE, LISTEN_SOCKET: path }, { socketInUse: 'left to the caller' });
      expect(loaded.config.listenSocket).toBe(path);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
