import { checkNetSettings } from '../net/settings.js';
import { checkTracingSettings } from '../telemetry/tracing/index.js';
import { checkStoreSettings } from '../store/index.js';
import { checkIssuerSettings } from '../token/discovery/index.js';
import { checkDpopSettings } from '../token/dpop/index.js';
import { checkTokenSettings } from '../token/settings.js';
import { checkListenerSettings } from './listeners/listener-settings.js';

/**
 * Each feature's check of its own settings, under the name its result is handed on by: the
 * loader runs them all and reports every problem together. The lists, for the proxy, `check`
 * and the tests that load a configuration as the proxy does. With what is at `LISTEN_SOCKET`'s
 * path (`listenOnSocket` in unix-socket.ts, which the start and `check` both call), it is all the
 * start refuses as configuration, and `check` refuses it in the same words.
 *
 * `SETTINGS_CHECKS` run once, on the top-level settings: the whole proxy's (its TLS material is
 * the token store's and the collector's). `ROUTE_CHECKS` run once per route (docs/routes.md), on
 * its settings over the top level's: its gateway's and credential's.
 */
export const SETTINGS_CHECKS = {
  tls: checkNetSettings,
  store: checkStoreSettings,
  listener: checkListenerSettings,
  tracing: checkTracingSettings,
} as const;

export const ROUTE_CHECKS = {
  tls: checkNetSettings,
  token: checkTokenSettings,
  dpop: checkDpopSettings,
  issuer: checkIssuerSettings,
} as const;

/** Both lists, as the configuration is read with them (cli/read-config.ts). */
export const CHECKS = { settings: SETTINGS_CHECKS, route: ROUTE_CHECKS } as const;
