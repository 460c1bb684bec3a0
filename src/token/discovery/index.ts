/**
 * Where token requests go, and how the proxy finds out when `ISSUER_URL` names an issuer instead
 * of a token URL: its metadata read (`issuer-metadata.ts`, the URLs of `well-known.ts`), the token
 * endpoint it names kept and read again when it seems to have moved (`issuer-endpoint.ts`), and
 * what the metadata says the client's choices are not among (`unlisted.ts`).
 */
import type { Dispatcher } from 'undici';
import type { Config } from '../../config/config.js';
import type { Clock } from '../../core/clock.js';
import type { Log } from '../../core/log.js';
import { authMethod } from '../client-auth/index.js';
import { issuerTokenEndpoint } from './issuer-endpoint.js';
import { readIssuerMetadata, type IssuerMetadata } from './issuer-metadata.js';
import { fixedTokenEndpoint, type TokenEndpoint } from './token-endpoint.js';
import { unlistedChoices } from './unlisted.js';

export interface EndpointDeps {
  /** The identity provider's connections (`Dispatchers.token`). */
  dispatcher: Dispatcher;
  clock: Clock;
  log: Log;
  /** The DPoP proofs' algorithm now, with `DPOP` on or required. */
  dpopAlg: () => string | undefined;
}

type EndpointSettings = Pick<Config, 'tokenUrl' | 'issuerUrl' | 'tokenFetchTimeoutMs' | 'allowInsecureHttp' | 'tokenAuthMethod'>;

/**
 * The token endpoint the settings name: `TOKEN_URL` (or the gateway's), or the one `ISSUER_URL`'s
 * metadata names, read with the token fetch's timeout and connections. Every metadata read logs,
 * at `warn`, what the metadata lists without the client's method or proof algorithm.
 */
export function tokenEndpointFromConfig(config: EndpointSettings, deps: EndpointDeps): TokenEndpoint {
  const issuer = config.issuerUrl;
  if (issuer === undefined) return fixedTokenEndpoint(config.tokenUrl!);
  const { dispatcher, clock, log } = deps;
  return issuerTokenEndpoint({
    issuer,
    read: () =>
      readIssuerMetadata({
        issuer,
        dispatcher,
        timeoutMs: config.tokenFetchTimeoutMs,
        allowInsecureHttp: config.allowInsecureHttp,
        mutualTls: authMethod(config.tokenAuthMethod).mutualTls === true,
        now: () => clock.now(),
      }),
    clock,
    log,
    onRead: (metadata) => {
      for (const warning of unlistedSettings(metadata, config, deps.dpopAlg())) log.warn({ issuer }, warning);
    },
  });
}

/** What the metadata lists without the configured `TOKEN_AUTH_METHOD`, or without the DPoP proofs' algorithm, one warning a line. */
export function unlistedSettings(metadata: IssuerMetadata, config: Pick<Config, 'tokenAuthMethod'>, dpopAlg: string | undefined): string[] {
  return unlistedChoices(metadata, { authMethod: authMethod(config.tokenAuthMethod).listedAs, dpopAlg });
}

export { sentTo, type TokenEndpoint } from './token-endpoint.js';
export type { IssuerMetadata } from './issuer-metadata.js';
export { checkIssuerSettings } from './settings.js';
