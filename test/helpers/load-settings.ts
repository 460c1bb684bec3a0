import { ROUTE_CHECKS, SETTINGS_CHECKS } from '../../src/app/settings-checks.js';
import { loadConfig, type ConfigSources } from '../../src/config/load.js';

/**
 * The loader with every feature's check, as `main.ts` wires it. What the first route's checks
 * read (the only route, without `routes` in the file) comes beside the top level's, as one
 * `checked`: a route's TLS files are then the top level's.
 */
export function loadSettings(sources: ConfigSources) {
  const loaded = loadConfig(sources, SETTINGS_CHECKS, ROUTE_CHECKS);
  return { ...loaded, checked: { ...loaded.checked, ...loaded.routes[0]!.checked } };
}

/** A file reader over a map of paths to contents; a missing path throws ENOENT as the file system does. */
export function filesOf(files: Record<string, string>): (path: string) => string {
  return (p) => {
    const content = files[p];
    if (content === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
    return content;
  };
}
