import type { DpopMode } from '../../config/config.js';
import type { Clock } from '../../core/clock.js';
import type { Log } from '../../core/log.js';
import type { DpopKey } from './dpop-key.js';
import { htuOf, type DpopGateway } from './htu.js';
import { asksForNonce, createDpopNonces, type DpopNonces, type NonceRole } from './nonces.js';
import { createDpopProver, type DpopProver } from './proof.js';

/** What the DPoP side reports, never a key, a proof or a token: the wiring counts it. */
export interface DpopObserver {
  /** A proof was signed for a request to the token endpoint or the gateway. */
  proofMade(target: NonceRole): void;
  /** The token endpoint or the gateway answered `use_dpop_nonce`. */
  nonceRequested(target: NonceRole): void;
}

/** The proxy's DPoP side, one per process: the key, the proofs, the servers' nonces. */
export interface DpopClient {
  /** `on`: a Bearer answer is used as Bearer; `required`: it is refused. */
  readonly mode: Exclude<DpopMode, 'off'>;
  readonly prover: DpopProver;
  /** A proof for a token request to `tokenUrl`, signed with `key`, with the token endpoint's latest nonce. */
  tokenRequestProof(tokenUrl: string, key: DpopKey): string;
  /** Keeps the token endpoint's `DPoP-Nonce` from any of its answers. */
  rememberTokenNonce(tokenUrl: string, header: string | string[] | undefined): void;
  /** The token endpoint asked for a nonce (counted; the caller retries). */
  tokenNonceRequested(): void;
  /** A proof for a request with `token` (bound to `key`) to a gateway: see {@link GatewayProofRequest}. */
  gatewayProof(request: GatewayProofRequest): string;
  /**
   * Keeps `gateway`'s `DPoP-Nonce` from any of its answers; true (and counted) when the answer
   * is a `401` with `WWW-Authenticate: DPoP error="use_dpop_nonce"` and a `DPoP-Nonce`.
   */
  gatewayAnswered(gateway: DpopGateway, status: number, headers: Readonly<Record<string, string | string[] | undefined>>): boolean;
  /** The identity provider answered a DPoP token request with a Bearer token: logged once. */
  bearerAnswered(): void;
}

/** What a proof for a request to a gateway is made for. */
export interface GatewayProofRequest {
  readonly gateway: DpopGateway;
  readonly method: string;
  /** The request target as the gateway gets it after its path prefix (path and query as received). */
  readonly target: string;
  /** The DPoP-bound token (the proof's `ath`) and the key it is bound to. */
  readonly token: string;
  readonly key: DpopKey;
}

export interface DpopClientOptions {
  mode: Exclude<DpopMode, 'off'>;
  key: DpopKey;
  clock: Clock;
  log: Log;
  observer?: DpopObserver | undefined;
}

const NO_OBSERVER: DpopObserver = { proofMade: () => {}, nonceRequested: () => {} };

/**
 * Creates the DPoP side (RFC 9449): one prover for every credential (one key per process), and the
 * nonces of the token endpoint and of each gateway kept apart.
 */
export function createDpopClient(options: DpopClientOptions): DpopClient {
  const { log } = options;
  const prover = createDpopProver({ key: options.key, clock: options.clock });
  const nonces: DpopNonces = createDpopNonces();
  const observer = options.observer ?? NO_OBSERVER;
  const tokenHtus = new Map<string, { htu: string; origin: string }>();
  const tokenTarget = (tokenUrl: string): { htu: string; origin: string } => {
    let t = tokenHtus.get(tokenUrl);
    if (t === undefined) {
      t = { htu: htuOf(tokenUrl), origin: new URL(tokenUrl).origin };
      tokenHtus.set(tokenUrl, t);
    }
    return t;
  };
  let bearerLogged = false;
  return {
    mode: options.mode,
    prover,
    tokenRequestProof(tokenUrl, key) {
      const t = tokenTarget(tokenUrl);
      observer.proofMade('token');
      return prover.proof('POST', t.htu, { key, nonce: nonces.get('token', t.origin) });
    },
    rememberTokenNonce(tokenUrl, header) {
      if (header !== undefined) nonces.remember('token', tokenTarget(tokenUrl).origin, header);
    },
    tokenNonceRequested: () => observer.nonceRequested('token'),
    gatewayProof({ gateway, method, target, token, key }) {
      observer.proofMade('gateway');
      return prover.proof(method, gateway.htu(target), { token, key, nonce: nonces.get('gateway', gateway.origin) });
    },
    gatewayAnswered(gateway, status, headers) {
      const header = headers['dpop-nonce'];
      if (header === undefined) return false;
      nonces.remember('gateway', gateway.origin, header);
      if (status !== 401 || !asksForNonce(headers['www-authenticate'])) return false;
      observer.nonceRequested('gateway');
      return true;
    },
    bearerAnswered() {
      if (bearerLogged) return;
      bearerLogged = true;
      log.warn(
        { dpop: options.mode },
        'the identity provider answered a DPoP token request with a Bearer token; it is used as Bearer (DPOP=on). Enable ' +
          'DPoP-bound tokens for this client at the identity provider, or set DPOP=required to refuse Bearer tokens',
      );
    },
  };
}
