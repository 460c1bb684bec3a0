import { checkListenerSettings } from '../../src/app/listener-settings.js';
import { loadConfig, type ConfigSources } from '../../src/config/load.js';
import { checkNetSettings } from '../../src/net/settings.js';
import { checkStoreSettings } from '../../src/store/settings.js';
import { checkIssuerSettings } from '../../src/token/discovery/settings.js';
import { checkDpopSettings } from '../../src/token/dpop/settings.js';
import { checkTokenSettings } from '../../src/token/settings.js';

/** The loader with every feature's check, as `main.ts` wires it. */
export function loadSettings(sources: ConfigSources) {
  return loadConfig(sources, {
    tls: checkNetSettings,
    token: checkTokenSettings,
    dpop: checkDpopSettings,
    issuer: checkIssuerSettings,
    store: checkStoreSettings,
    listener: checkListenerSettings,
  });
}

/** A file reader over a map of paths to contents; a missing path throws ENOENT as the file system does. */
export function filesOf(files: Record<string, string>): (path: string) => string {
  return (p) => {
    const content = files[p];
    if (content === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
    return content;
  };
}
