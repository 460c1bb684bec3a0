import { createHash } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { ConfiguredCredential } from './client-auth/index.js';
import type { DpopClient } from './dpop/index.js';

/**
 * What makes two routes' configured credentials the same (docs/routes.md, "Isolation, and one
 * token for the same credential"), for the start and `check` alike: the token endpoint (or the
 * issuer that names it), the client, its authentication method and the material that proves it
 * (the secret, the assertion key with its algorithm and key id, the assertion file, the client
 * certificate), the scope, the extra parameters, and the DPoP key. Routes whose identities are
 * equal share one token, fetched once. A digest: never the secret.
 */
export function credentialIdentity(
  config: Config,
  auth: ConfiguredCredential,
  certificate: string | undefined,
  dpop: DpopClient | undefined,
): string {
  const material = auth.material();
  const parts = [
    config.issuerUrl === undefined ? `token_url ${config.tokenUrl ?? ''}` : `issuer ${config.issuerUrl}`,
    `client ${auth.credential?.clientId ?? ''}`,
    `method ${config.tokenAuthMethod}`,
    `secret ${material.clientSecret ?? ''}`,
    `key ${material.assertionKey?.export({ format: 'der', type: 'pkcs8' }).toString('base64') ?? ''}`,
    `key alg ${config.clientAssertionAlg ?? ''} kid ${config.clientAssertionKid ?? ''}`,
    `assertion ${config.clientAssertionFile ?? ''}`,
    `certificate ${certificate ?? ''}`,
    `scope ${config.tokenScope ?? ''}`,
    `params ${JSON.stringify(config.tokenParams)}`,
    `dpop ${dpop === undefined ? 'off' : `${dpop.mode} ${dpop.prover.key().thumbprint}`}`,
  ];
  return createHash('sha256').update(parts.join('\0')).digest('base64url');
}
