import { SETTINGS } from '../../config/config.js';

export interface CliArgs {
  command: 'run' | 'check' | 'help' | 'version' | 'store-functions';
  configFile: string | undefined;
}

/** Parses the command line; throws an Error with a usage message on anything unknown. */
export function parseArgs(argv: readonly string[]): CliArgs {
  let command: CliArgs['command'] = 'run';
  let check = false;
  let configFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') command = 'help';
    else if (arg === '--version' || arg === '-v') command = command === 'help' ? 'help' : 'version';
    else if (arg === '--config' || arg === '-c') {
      const value = argv[++i];
      if (value === undefined || value.startsWith('-')) throw new Error(`${arg} needs a file name`);
      configFile = value;
    } else if (arg.startsWith('--config=')) {
      configFile = arg.slice('--config='.length);
      if (configFile === '') throw new Error('--config needs a file name');
    } else if (arg === 'check' && !check) check = true;
    else if (arg === 'store-functions') command = command === 'run' ? 'store-functions' : command;
    else throw new Error(`unknown argument ${JSON.stringify(arg)}; see --help`);
  }
  // --help and --version win wherever they stand, as they do after `check`.
  return { command: command === 'run' && check ? 'check' : command, configFile };
}

/** The settings as a table: environment name, file key, default; each column as wide as its longest entry. */
function settingsTable(): string[] {
  const rows = [
    ['ENV', 'FILE KEY', ''],
    ...SETTINGS.map((s) => [
      s.env,
      s.envOnly ? '(environment only)' : s.key,
      s.default === undefined ? '' : `default ${String(s.default)}`,
    ]),
  ];
  const envWidth = Math.max(...rows.map((r) => r[0]!.length));
  const keyWidth = Math.max(...rows.map((r) => r[1]!.length));
  return rows.map(([env, key, def]) => `  ${env!.padEnd(envWidth)}  ${key!.padEnd(keyWidth)}  ${def!}`.trimEnd());
}

/** The text of `--help`: the commands, and every setting with its file key and default. */
export function helpText(version: string): string {
  return `ticket-auth-proxy ${version}
Forwards local calls to the Ticket Service gateway with an OAuth 2.0 access token it obtains
(client credentials), caches and refreshes itself.

Usage:
  ticket-auth-proxy [--config FILE]          run the proxy
  ticket-auth-proxy check [--config FILE]    fetch one token, print its lifetime, exit
  ticket-auth-proxy store-functions          print the token store's function library (TOKEN_STORE_SCRIPTS=functions)
  ticket-auth-proxy --help | --version

Settings come from the environment, which overrides the optional YAML file (--config FILE or
CONFIG_FILE; keys in lower camelCase):
${settingsTable().join('\n')}

Listeners: the proxy on LISTEN_HOST:LISTEN_PORT (127.0.0.1:8180) or on the Unix socket
LISTEN_SOCKET, the admin listener with /livez, /readyz and /metrics on ADMIN_HOST:ADMIN_PORT
(0.0.0.0:8181).
`;
}
