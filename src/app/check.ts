import { systemClock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import { createLogger } from '../core/log.js';
import { dispatchersFromSettings } from '../net/dispatchers.js';
import type { TlsFiles } from '../net/tls-files.js';
import { configuredCredential } from '../token/configured-credential.js';
import { describeFetchFailure } from '../token/diagnose.js';
import { tokenFetcherFromConfig } from '../token/fetch-token.js';
import type { TokenStartup } from '../token/settings.js';

/**
 * The `check` command: what the credential is (never the secret, key or assertion), then one
 * token fetch, its lifetime printed (never the token). Resolves with the exit status: 0 when a
 * token was obtained, 1 when the fetch failed, 2 when no credential is configured.
 */
export async function check(config: Config, startup: { tls: TlsFiles; token: TokenStartup }): Promise<number> {
  const auth = configuredCredential(config, { clock: systemClock, log: createLogger('silent'), startup: startup.token });
  const credential = auth.credential;
  if (credential === undefined) {
    process.stderr.write('ticket-auth-proxy: check needs CLIENT_ID and CLIENT_SECRET_FILE (or CLIENT_SECRET)\n');
    return 2;
  }
  const dispatchers = dispatchersFromSettings(config, startup.tls.material);
  for (const line of auth.describe(Date.now())) process.stdout.write(`${line}\n`);
  const fetchToken = tokenFetcherFromConfig(config, dispatchers.token, Date.now, auth.clientAuth);
  const started = Date.now();
  try {
    const grant = await fetchToken(credential);
    const lifetimeS = Math.round(grant.lifetimeMs / 1000);
    process.stdout.write(
      `ok: token obtained from ${config.tokenUrl} in ${Date.now() - started} ms; ` +
        `lifetime ${lifetimeS} s (expires ${new Date(started + grant.lifetimeMs).toISOString()})\n`,
    );
    await dispatchers.close();
    return 0;
  } catch (err) {
    const failure = describeFetchFailure(err, config.tokenUrl);
    process.stderr.write(`ticket-auth-proxy: check failed: ${failure.outcome}: ${failure.text}\n`);
    return 1;
  }
}
