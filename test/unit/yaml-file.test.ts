import { afterEach, describe, expect, it, vi } from 'vitest';
import { SettingsRefused } from '../../src/config/load.js';
import { readYamlFile } from '../../src/config/yaml-file.js';
import { ConfigError } from '../../src/core/errors.js';
import { filesOf, loadSettings } from '../helpers/load-settings.js';

const FILE = '/etc/ticket-auth-proxy.yaml';

/** The file read as the proxy reads it, the library's debugging variables looked for in this process's environment. */
const read = (text: string) => readYamlFile(FILE, text, process.env);
const SECRET = 'S3cret-yaml-71';
const HEAD = 'baseUrl: https://gw.example.com\nclientId: app\n';

/** The file read as the proxy reads it, then loaded with every feature's check: the problems, or [] when it loads. */
async function problemsOf(text: string, env: Record<string, string> = {}): Promise<readonly string[]> {
  const file = await read(text);
  try {
    loadSettings({ env, file, readFile: filesOf({}) });
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(SettingsRefused);
    return (err as SettingsRefused).problems;
  }
}

/** The syntax problems `readYamlFile` throws. */
async function syntaxOf(text: string): Promise<readonly string[]> {
  try {
    await read(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError, the file was read');
}

const TAG =
  'a YAML tag (a name after "!") that the proxy does not resolve: the file holds plain values; write the value itself, in quotes if it begins with "!"';
const ALIAS = 'an alias (a name after "*") with no anchor before it: write the value itself, in quotes if it begins with "*"';

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe('the configuration file, read so that the YAML library prints nothing', () => {
  it('refuses an unresolved tag naming the key and its line, never the value, and does not take the tagged text as the secret', async () => {
    const problems = await problemsOf(`${HEAD}clientSecret: !vault ${SECRET}\n`);
    expect(problems).toContain(`clientSecret in ${FILE} (CLIENT_SECRET), line 3: ${TAG}`);
    expect(problems.join('\n')).not.toContain(SECRET);
    expect(problems.join('\n')).not.toContain('vault');
  });

  it('refuses an alias to no anchor naming the key, never the alias (which may be the secret itself)', async () => {
    const problems = await problemsOf(`${HEAD}clientSecret: *${SECRET}\n`);
    expect(problems).toContain(`clientSecret in ${FILE} (CLIENT_SECRET), line 3: ${ALIAS}`);
    expect(problems.join('\n')).not.toContain(SECRET);
  });

  it('reports a refused key beside every other problem of the file and the environment', async () => {
    const problems = await problemsOf(`${HEAD}clientSecret: !vault ${SECRET}\ntracing:\n  headers: *${SECRET}\nlistenPort: 99999\n`, {
      LOG_LEVEL: 'chatty',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        `clientSecret in ${FILE} (CLIENT_SECRET), line 3: ${TAG}`,
        `tracing.headers in ${FILE} (OTEL_EXPORTER_OTLP_HEADERS), line 5: ${ALIAS}`,
        `listenPort in ${FILE} (LISTEN_PORT) must be a port number from 0 to 65535 (got 99999)`,
        expect.stringMatching(/^LOG_LEVEL must be one of /),
      ]),
    );
    expect(problems.join('\n')).not.toContain(SECRET);
  });

  it('prints nothing itself: no process warning, no console line, not even with the library’s debug variables set', async () => {
    vi.stubEnv('LOG_TOKENS', '1');
    vi.stubEnv('LOG_STREAM', '1');
    const emitted = vi.spyOn(process, 'emitWarning');
    const out = vi.spyOn(process.stdout, 'write');
    const err = vi.spyOn(process.stderr, 'write');
    const consoles = (['log', 'warn', 'error', 'dir', 'info', 'debug'] as const).map((m) => vi.spyOn(console, m));
    const file = await read(`%FOO bar\n---\n${HEAD}clientSecret: !vault ${SECRET}\nclientSecretFile: *${SECRET}\n? [a]\n`).catch(
      (e: unknown) => e,
    );
    await read(`${HEAD}clientSecret: !!binary ${Buffer.from(SECRET).toString('base64')}\n`);
    expect(file).toBeInstanceOf(ConfigError);
    for (const spy of [emitted, out, err, ...consoles]) expect(spy).not.toHaveBeenCalled();
    // The variables are the user's again afterwards.
    expect(process.env.LOG_TOKENS).toBe('1');
    expect(process.env.LOG_STREAM).toBe('1');
  });

  it('lists every syntax error with its line, column and setting, in words that quote nothing of the file', async () => {
    const problems = await syntaxOf(`${HEAD}clientSecret: "${SECRET}\\q"\ntokenScope: [a, b\n`);
    expect(problems).toEqual([
      `${FILE} is not valid YAML at line 3, column ${16 + SECRET.length} (in clientSecret): ` +
        'an escape sequence double quotes do not allow: use single quotes, or write a backslash as \\\\',
      expect.stringMatching(new RegExp(`^${FILE} is not valid YAML at line 5, column 1( \\(in tokenScope\\))?: `)),
    ]);
    expect(problems.join('\n')).not.toContain(SECRET);
  });

  it('names no key that is not a setting: the file’s own text may be anything', async () => {
    const file = await read(`${HEAD}${SECRET}: !vault x\n`);
    expect(file.refused).toEqual([]);
    expect(file.problems).toEqual([`${FILE}, line 3: ${TAG}`]);
    // Inside a group, a leaf that is no setting's: the group alone is named.
    expect((await read(`${HEAD}tracing:\n  ${SECRET}: !vault x\n`)).refused).toEqual([{ key: 'tracing', line: 4, reason: TAG }]);
    expect((await syntaxOf(`${HEAD}${SECRET}: "a\\q"\n`))[0]).toBe(
      `${FILE} is not valid YAML at line 3, column ${SECRET.length + 5}: ` +
        'an escape sequence double quotes do not allow: use single quotes, or write a backslash as \\\\',
    );
  });

  it('refuses YAML 1.1 types, a second document, a key that is a list, a key given twice and aliases that expand too far', async () => {
    expect(await problemsOf(`${HEAD}clientSecret: !!binary ${Buffer.from(SECRET).toString('base64')}\n`)).toContain(
      `clientSecret in ${FILE} (CLIENT_SECRET), line 3: ${TAG}`,
    );
    expect(await syntaxOf(`${HEAD}clientSecret: x\n---\nclientSecret: y\n`)).toEqual([
      `${FILE} is not valid YAML at line 4, column 1: a second YAML document (after "---"): the file holds one mapping of settings`,
    ]);
    expect(await syntaxOf(`${HEAD}? [${SECRET}]\n: 1\n`)).toEqual([
      `${FILE} is not valid YAML at line 3, column 3: a key that is a mapping or a list: keys are plain names`,
    ]);
    expect(await syntaxOf(`${HEAD}clientId: other\n`)).toEqual([
      `${FILE} is not valid YAML at line 3, column 1 (in clientId): a key given twice`,
    ]);
    const laughs = [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      ...['b', 'c', 'd'].map((n, i) => `${n}: &${n} [${Array(9).fill(`*${'abc'[i]!}`).join(', ')}]`),
    ];
    expect(await syntaxOf(`${laughs.join('\n')}\n`)).toEqual([`${FILE} cannot be read as settings (its aliases expand past 100 values)`]);
  });

  it('takes anchors and aliases that resolve, and the core types written as tags', async () => {
    const file = await read(`${HEAD}clientSecret: &s !!str 0123\nclientSecretFile: null\ntokenDefaultTtlS: !!int 120\ntokenScope: *s\n`);
    expect(file.values).toMatchObject({ clientSecret: '0123', tokenDefaultTtlS: 120, tokenScope: '0123' });
    expect([file.refused, file.problems, file.warnings]).toEqual([[], [], []]);
  });

  it('warns of what changes no value, with its line, through the loader’s warnings', async () => {
    const file = await read(`%FOO ${SECRET}\n---\n${HEAD}clientSecret: x\n`);
    const { warnings } = loadSettings({ env: {}, file, readFile: filesOf({}) });
    expect(warnings).toEqual([
      {
        setting: 'CONFIG_FILE',
        message: `${FILE}, line 1, column 1: a directive (a line beginning with "%") that YAML does not know or cannot read; taken as if it were not there`,
      },
    ]);
  });
});
