import { SETTINGS_CHECKS } from '../../src/app/settings-checks.js';
import { loadConfig, type ConfigSources } from '../../src/config/load.js';

/** The loader with every feature's check, as `main.ts` wires it. */
export function loadSettings(sources: ConfigSources) {
  return loadConfig(sources, SETTINGS_CHECKS);
}

/** A file reader over a map of paths to contents; a missing path throws ENOENT as the file system does. */
export function filesOf(files: Record<string, string>): (path: string) => string {
  return (p) => {
    const content = files[p];
    if (content === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
    return content;
  };
}
