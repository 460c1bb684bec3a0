import { readFileSync } from 'node:fs';
import { loadConfig, type Loaded, type SettingsCheck } from '../../config/load.js';
import { nearMissVariables, nearMissWarning } from '../../config/near-miss.js';
import { readYamlFile, type SettingsFile } from '../../config/yaml-file.js';
import { ConfigError } from '../../core/errors.js';
import { redactUserinfo } from '../../core/redact.js';
import { unreadableFileProblem } from '../../core/unreadable.js';

/**
 * Reads the configuration: the YAML file named by `--config` or `CONFIG_FILE` (read so that the
 * YAML library prints nothing of it: yaml-file.ts), the environment (the process's own: the
 * library reads it too),
 * then each feature's check of its own settings (handed in by the caller, so that the loader
 * knows no feature). `yaml` is loaded only when a file is named: it costs memory otherwise unused.
 * Throws {@link ConfigError} naming every problem.
 */
export async function readConfig<C extends Record<string, SettingsCheck>>(
  configFile: string | undefined,
  checks: C,
  env: NodeJS.ProcessEnv,
): Promise<Loaded<C>> {
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
  return loadConfig({ env, file, readFile: (p) => readFileSync(p, 'utf8'), readBytes: (p) => readFileSync(p) }, checks);
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
