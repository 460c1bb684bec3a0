import { checkNetSettings } from '../net/settings.js';
import { checkTracingSettings } from '../telemetry/tracing/index.js';
import { checkStoreSettings } from '../store/index.js';
import { checkIssuerSettings } from '../token/discovery/index.js';
import { checkDpopSettings } from '../token/dpop/index.js';
import { checkTokenSettings } from '../token/settings.js';
import { checkListenerSettings } from './listeners/listener-settings.js';

/**
 * Each feature's check of its own settings, under the name its result is handed on by: the
 * loader runs them all and reports every problem together. The one list, for the proxy, `check`
 * and the tests that load a configuration as the proxy does. With what is at `LISTEN_SOCKET`'s
 * path (`listenOnSocket` in unix-socket.ts, which the start and `check` both call), it is all the
 * start refuses as configuration, and `check` refuses it in the same words.
 */
export const SETTINGS_CHECKS = {
  tls: checkNetSettings,
  token: checkTokenSettings,
  dpop: checkDpopSettings,
  issuer: checkIssuerSettings,
  store: checkStoreSettings,
  listener: checkListenerSettings,
  tracing: checkTracingSettings,
} as const;
