import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config/config.js';
import { helpText, parseArgs } from '../../src/app/cli/cli.js';

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
