import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import type { Log } from '../core/log.js';
import type { Dispatcher } from 'undici';
import type { Metrics } from '../telemetry/metrics.js';
import { configuredAuth } from '../token/configured-auth.js';
import { tokenFetcherFromConfig } from '../token/fetch-token.js';
import { watchSecretFile } from '../token/secret-file.js';
import { createSourceCache, type SourceCache } from '../token/source-cache.js';
import { TokenSource } from '../token/token-source.js';
import type { StopList } from './shutdown.js';

export interface TokenSourceDeps {
  config: Config;
  clock: Clock;
  log: Log;
  random: () => number;
  metrics: Metrics;
  /** The token endpoint's connections. */
  dispatcher: Dispatcher;
  /** Where each part registers how it is stopped. */
  stops: StopList;
}

/**
 * The configured credential's token source (when one is configured), following its secret file
 * and its client authentication's files, and the pass-through credentials' cache (when
 * `PASSTHROUGH_BASIC` is on). Neither is started here.
 */
export function createTokenSources(deps: TokenSourceDeps): { configured: TokenSource | undefined; passthrough: SourceCache | undefined } {
  return { configured: configuredSource(deps), passthrough: passthroughCache(deps) };
}

function configuredSource({ config, clock, log, random, metrics, dispatcher, stops }: TokenSourceDeps): TokenSource | undefined {
  // How the configured client proves who it is (TOKEN_AUTH_METHOD).
  const auth = configuredAuth(config, { clock, log });
  if (auth.credential === undefined) return undefined;
  const clientId = auth.credential.clientId;
  const source = new TokenSource({
    label: 'configured',
    credential: auth.credential,
    fetchToken: tokenFetcherFromConfig(config, dispatcher, () => clock.now(), auth.clientAuth),
    clock,
    random,
    refreshRatio: config.tokenRefreshRatio,
    waitTimeoutMs: config.tokenWaitTimeoutMs,
    log,
    observer: metrics.configuredToken,
    tokenUrl: config.tokenUrl,
  });
  stops.add(() => source.stop());
  if (config.clientSecretFile !== undefined && config.clientSecret !== undefined) {
    stops.add(
      watchSecretFile({
        path: config.clientSecretFile,
        initial: config.clientSecret,
        clock,
        log,
        onChange: (clientSecret) => source.setCredential({ clientId, clientSecret }),
      }),
    );
  }
  stops.add(auth.watch((credential) => source.setCredential(credential)));
  return source;
}

/** Callers' own Basic credentials, each with a token source of its own. */
function passthroughCache({ config, clock, log, random, metrics, dispatcher, stops }: TokenSourceDeps): SourceCache | undefined {
  if (!config.passthroughBasic) return undefined;
  const cache = createSourceCache({
    max: config.tokenCacheMax,
    fetchToken: tokenFetcherFromConfig(config, dispatcher, () => clock.now()),
    clock,
    random,
    refreshRatio: config.tokenRefreshRatio,
    waitTimeoutMs: config.tokenWaitTimeoutMs,
    defaultLifetimeMs: config.tokenDefaultTtlS * 1000,
    log,
    observer: metrics.passthroughToken,
    onSize: (n) => metrics.setTokenCacheEntries(n),
  });
  stops.add(() => cache.stop());
  return cache;
}
