import { systemClock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import { createLogger } from '../core/log.js';
import { dispatchersFromSettings } from '../net/dispatchers.js';
import type { TlsFiles } from '../net/tls-files.js';
import { configuredCredential, type TokenStartup } from '../token/client-auth/index.js';
import { describeFetchFailure } from '../token/diagnose.js';
import { tokenEndpointFromConfig, unlistedSettings } from '../token/discovery/index.js';
import { tokenFetcherFromConfig } from '../token/fetch-token.js';
import type { DpopStartup } from '../token/dpop/index.js';
import { dpopClient } from './token-sources.js';

/**
 * The `check` command: what the credential is (never the secret, key or assertion), then one
 * token fetch, its lifetime printed (never the token). With DPoP, the key's RFC 7638 thumbprint
 * and whether the token came back DPoP- or Bearer-typed. With `ISSUER_URL`, first the token
 * endpoint its metadata names, and a warning for the method or proof algorithm the metadata does
 * not list. Resolves with the exit status: 0 when a token was obtained, 1 when the metadata or the
 * fetch failed (with `DPOP=required`, a Bearer answer too), 2 when no credential is configured.
 */
export async function check(config: Config, startup: { tls: TlsFiles; token: TokenStartup; dpop?: DpopStartup }): Promise<number> {
  const log = createLogger('silent');
  const auth = configuredCredential(config, { clock: systemClock, log, startup: startup.token });
  const credential = auth.credential;
  if (credential === undefined) {
    process.stderr.write('ticket-auth-proxy: check needs CLIENT_ID and CLIENT_SECRET_FILE (or CLIENT_SECRET)\n');
    return 2;
  }
  const dispatchers = dispatchersFromSettings(config, startup.tls.material);
  for (const line of auth.describe(Date.now())) process.stdout.write(`${line}\n`);
  const dpop = startup.dpop === undefined ? undefined : dpopClient(config, startup.dpop, { clock: systemClock, log });
  if (dpop !== undefined) {
    const key = dpop.prover.key();
    process.stdout.write(`DPoP: ${dpop.mode}, proofs signed ${key.alg}, key thumbprint (RFC 7638) ${key.thumbprint}\n`);
  }
  const dpopAlg = (): string | undefined => dpop?.prover.key().alg;
  const endpoint = tokenEndpointFromConfig(config, { dispatcher: dispatchers.token, clock: systemClock, log, dpopAlg });
  const failed = (err: unknown): number => {
    const failure = describeFetchFailure(err, endpoint);
    process.stderr.write(`ticket-auth-proxy: check failed: ${failure.outcome}: ${failure.text}\n`);
    return 1;
  };
  if (endpoint.issuer !== undefined) {
    try {
      await endpoint.resolve();
    } catch (err) {
      return failed(err);
    }
    const metadata = endpoint.metadata!;
    process.stdout.write(`token endpoint: ${metadata.tokenEndpoint} (from ${metadata.documentUrl})\n`);
    for (const warning of unlistedSettings(metadata, config, dpopAlg())) process.stderr.write(`ticket-auth-proxy: warning: ${warning}\n`);
  }
  const fetchToken = tokenFetcherFromConfig(config, endpoint, dispatchers.token, Date.now, auth.clientAuth, dpop);
  const started = Date.now();
  try {
    const grant = await fetchToken(credential);
    const lifetimeS = Math.round(grant.lifetimeMs / 1000);
    process.stdout.write(
      `ok: token obtained from ${endpoint.url} in ${Date.now() - started} ms; ` +
        `lifetime ${lifetimeS} s (expires ${new Date(started + grant.lifetimeMs).toISOString()})\n`,
    );
    if (dpop !== undefined) {
      process.stdout.write(
        grant.tokenType === 'DPoP'
          ? `token type: DPoP (bound to the key ${grant.dpopKey!.thumbprint})\n`
          : 'token type: Bearer (the identity provider did not bind the token to the key; DPOP=on uses it as Bearer)\n',
      );
    }
    await dispatchers.close();
    return 0;
  } catch (err) {
    return failed(err);
  }
}
