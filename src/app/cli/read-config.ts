import { readFileSync } from 'node:fs';
import { loadConfig, SettingsRefused, type ConfigWarning, type Loaded, type SettingsCheck } from '../../config/load.js';
import { nearMissVariables, nearMissWarning } from '../../config/near-miss.js';
import { readYamlFile, type SettingsFile } from '../../config/yaml-file.js';
import { ConfigError } from '../../core/errors.js';
import { redactUserinfo } from '../../core/redact.js';
import { unreadableFileProblem } from '../../core/unreadable.js';
import { claimSocketPath, socketPathProblem, SocketInUseError } from '../listeners/unix-socket.js';

export interface ReadConfigOptions {
  /**
   * What a socket a process answers on at `LISTEN_SOCKET` is: a problem, as at start; or left to
   * the caller, as `check` leaves it (a running proxy holds its own socket: a warning there).
   */
  socketInUse: 'problem' | 'left to the caller';
}

/**
 * Reads the configuration: the YAML file named by `--config` or `CONFIG_FILE`, the environment
 * (the process's own: the YAML library reads it too, yaml-file.ts),
 * then each feature's check of its own settings (handed in by the caller, so that the loader
 * knows no feature), then what is at `LISTEN_SOCKET`'s path, examined as the start examines it
 * (nothing is changed there), so that a refused path is reported beside every other problem.
 * `yaml` is loaded only when a file is named: it costs memory otherwise unused. Throws
 * {@link ConfigError} naming every problem; a {@link SettingsRefused} carries the warnings too.
 */
export async function readConfig<C extends Record<string, SettingsCheck>, R extends Record<string, SettingsCheck>>(
  configFile: string | undefined,
  checks: { readonly settings: C; readonly route: R },
  env: NodeJS.ProcessEnv,
  options: ReadConfigOptions = { socketInUse: 'problem' },
): Promise<Loaded<C, R>> {
  const path = configFile ?? env.CONFIG_FILE;
  let file: SettingsFile | undefined;
  if (path !== undefined && path !== '') {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new ConfigError([unreadableFileProblem(configFile !== undefined ? '--config' : 'CONFIG_FILE', path, err)]);
    }
    try {
      file = await readYamlFile(path, text, env);
    } catch (err) {
      // Its problems name lines and settings, never a value; a path may carry user information.
      throw err instanceof ConfigError ? new ConfigError(err.problems.map(redactUserinfo)) : err;
    }
  }
  let loaded: Loaded<C, R> | undefined;
  let refusal: SettingsRefused | undefined;
  try {
    const sources = { env, file, readFile: (p: string) => readFileSync(p, 'utf8'), readBytes: (p: string) => readFileSync(p) };
    loaded = loadConfig(sources, checks.settings, checks.route);
  } catch (err) {
    if (!(err instanceof SettingsRefused)) throw err;
    refusal = err;
  }
  const config = loaded?.config ?? refusal!.config;
  const sockets = [
    { name: 'LISTEN_SOCKET', path: config.listenSocket },
    ...(loaded?.routes ?? []).map(({ name, way }) => ({
      name: `routes: "${name}"'s listenSocket`,
      path: way.kind === 'socket' ? way.path : undefined,
    })),
  ];
  const socket = (await Promise.all(sockets.map((s) => socketProblem(s, options)))).filter((p) => p !== undefined);
  if (refusal === undefined && socket.length === 0) return loaded!;
  throw new SettingsRefused([...(refusal?.problems ?? []), ...socket], refusal?.warnings ?? loaded!.warnings, config);
}

/** What the start would refuse at a socket's path (unix-socket.ts), or undefined. */
async function socketProblem(socket: { name: string; path: string | undefined }, options: ReadConfigOptions): Promise<string | undefined> {
  const { path } = socket;
  // A path the settings refuse (relative, too long) is not examined: it has its problem already.
  if (path === undefined || socketPathProblem(path, socket.name) !== undefined) return undefined;
  try {
    await claimSocketPath(path);
    return undefined;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    if (err instanceof SocketInUseError && options.socketInUse !== 'problem') return undefined;
    return err.problems.join('; ');
  }
}

/** The warnings a refusal carries: said with its problems, not only once they are fixed. */
export function refusalWarnings(err: unknown): readonly ConfigWarning[] {
  return err instanceof SettingsRefused ? err.warnings : [];
}

/**
 * A warning to give at start (a log line) and in `check` (a line on stderr): an environment
 * variable that looks like a misspelt setting, or a setting's value that looks like a mistake.
 */
export interface SettingWarning {
  readonly setting: string;
  readonly message: string;
  /** The variable that looks like a misspelt `setting`. */
  readonly variable?: string;
}

/** The environment variables that look like a misspelt setting, each with the warning to give. */
export function settingWarnings(env: NodeJS.ProcessEnv): SettingWarning[] {
  return nearMissVariables(env).map((miss) => ({ ...miss, message: nearMissWarning(miss) }));
}
