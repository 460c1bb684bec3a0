import type { Config } from '../config/config.js';
import { systemClock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { TlsMaterial } from '../net/tls-material.js';
import { openTokenStore, type StoreSettings } from '../store/index.js';
import { authMethod, type ConfiguredCredential } from '../token/client-auth/index.js';
import type { DpopClient } from '../token/dpop/index.js';
import { slotSeed } from '../token/from-store/slot-seed.js';

/**
 * What `check` says of the shared token store: whether it is reachable and accepts the password,
 * whether it holds a usable token for the configured credential and for how long (never the
 * token). Resolves false when the store is configured but cannot be used; every line names the
 * setting to look at.
 */
export async function checkTokenStore(
  config: Config,
  settings: StoreSettings,
  deps: { credential: ConfiguredCredential; clientId: string; tls: TlsMaterial; dpop: DpopClient | undefined; log: Log },
): Promise<boolean> {
  const where = settings.endpoint.shown;
  const opened = openTokenStore({
    settings,
    fetchTimeoutMs: config.tokenFetchTimeoutMs,
    tls: deps.tls,
    clock: systemClock,
    random: Math.random,
    log: deps.log,
  });
  const store = opened.tokens;
  const say = (line: string): void => void process.stdout.write(`token store: ${line}\n`);
  try {
    const probe = await store.probe();
    if (probe.kind === 'unavailable') {
      process.stderr.write(`ticket-auth-proxy: check failed: the token store cannot be used: ${probe.detail}\n`);
      return false;
    }
    say(`${where} reachable${settings.password === undefined ? '' : ', password accepted'}`);
    const sharing = slotSeed({
      settings: config,
      method: authMethod(config.tokenAuthMethod),
      clientId: deps.clientId,
      material: { ...deps.credential.material(), clientCertificate: deps.tls.cert },
      dpopKey: deps.dpop && { thumbprint: deps.dpop.prover.key().thumbprint, fromFile: config.dpopKeyFile !== undefined },
      keyFile: settings.keyMaterial,
    });
    if (!sharing.shared) {
      say(`not used for this credential: ${sharing.reason}`);
      return true;
    }
    const read = await (await store.slot(sharing.seed)).read();
    if (read.kind === 'unavailable') {
      process.stderr.write(`ticket-auth-proxy: check failed: the token store cannot be used: ${read.detail}\n`);
      return false;
    }
    if (read.kind === 'hit') say(`holds a usable token for this credential, for ${Math.floor(read.remainingMs / 1000)} s more`);
    else if (read.invalid) say('holds an entry for this credential that does not decrypt; the next fetch replaces it');
    else say('holds no usable token for this credential; the proxy fetches one at start and shares it');
    if (read.failure !== undefined) {
      const inS = Math.ceil((read.failure.nextAttemptAtMs - Date.now()) / 1000);
      say(`a failed fetch is recorded (${read.failure.outcome}): no proxy tries again for ${inS} s`);
    }
    return true;
  } finally {
    await opened.close();
  }
}
