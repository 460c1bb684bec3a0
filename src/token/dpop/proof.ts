import { createHash, randomUUID } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import type { DpopKey } from './dpop-key.js';

/** What one proof is about (RFC 9449 §4.2). */
export interface ProofOptions {
  /** The access token the request carries: the proof gets its `ath`. Absent at the token endpoint. */
  token?: string | undefined;
  /** The server's latest `DPoP-Nonce`, when it has sent one. */
  nonce?: string | undefined;
  /**
   * The key to sign with: a DPoP-bound token's proofs must be signed with the key it was bound
   * to, even after a rotation has made another key current. Default: the current key.
   */
  key?: DpopKey | undefined;
}

/** Makes DPoP proofs with the current key, which a rotation may replace at any time. */
export interface DpopProver {
  /** The key new token requests are bound to; hold on to it with the token it binds. */
  key(): DpopKey;
  /** Makes `key` the current key; false when it has the current key's thumbprint (nothing changes). */
  replaceKey(key: DpopKey): boolean;
  /** A fresh proof JWT for a request of method `htm` to `htu` (see `htu.ts`). */
  proof(htm: string, htu: string, options?: ProofOptions): string;
}

export interface DpopProverOptions {
  key: DpopKey;
  clock: Clock;
  /** A fresh unique `jti` per call; default a random UUID (122 random bits). */
  jti?: () => string;
}

/** RFC 9449 §4.2: `ath`, the base64url SHA-256 of the access token's ASCII octets. */
export function accessTokenHash(token: string): string {
  return createHash('sha256').update(token, 'ascii').digest('base64url');
}

/**
 * Creates the proof maker. Per call it builds only the claims (`jti`, `htm`, `htu`, `iat`,
 * `ath`, `nonce`) and one signature: the header is encoded once per key, and the `ath` of the
 * last token is kept, since one token serves every request until it is replaced. No JWT library
 * on this path. A rotation swaps the key with one assignment: a proof is signed entirely by the
 * key it started with.
 */
export function createDpopProver(options: DpopProverOptions): DpopProver {
  const { clock } = options;
  const jti = options.jti ?? randomUUID;
  let current = options.key;
  let lastToken = '';
  let lastAth = '';

  return {
    key: () => current,
    replaceKey(key) {
      if (key.thumbprint === current.thumbprint && key.alg === current.alg) return false;
      current = key;
      return true;
    },
    proof(htm, htu, opts) {
      const key = opts?.key ?? current;
      const iat = Math.floor(clock.now() / 1000);
      let claims = `{"jti":${JSON.stringify(jti())},"htm":${JSON.stringify(htm)},"htu":${JSON.stringify(htu)},"iat":${iat}`;
      const token = opts?.token;
      if (token !== undefined) {
        if (token !== lastToken) {
          lastAth = accessTokenHash(token);
          lastToken = token;
        }
        claims += `,"ath":"${lastAth}"`;
      }
      if (opts?.nonce !== undefined) claims += `,"nonce":${JSON.stringify(opts.nonce)}`;
      const input = `${key.encodedHeader}.${Buffer.from(`${claims}}`).toString('base64url')}`;
      return `${input}.${key.sign(Buffer.from(input, 'latin1')).toString('base64url')}`;
    },
  };
}
