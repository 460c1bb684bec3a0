import type { Clock } from '../core/clock.js';
import type { DpopClient } from './dpop/index.js';
import type { DpopGateway } from './dpop/htu.js';
import type { TokenGrant } from './parse-response.js';

/**
 * What a forwarded request needs to be authorised with a held token, built once per token: the
 * `Authorization` value and, for a DPoP-bound token, the maker of each request's proof. The
 * forwarding path reads it and knows nothing of keys.
 */
export interface Authorization {
  readonly token: string;
  /** `Bearer <token>` or `DPoP <token>`. */
  readonly header: string;
  /**
   * DPoP-bound tokens only: a fresh `DPoP` proof for a request of `method` to `gateway`'s target
   * `target` (path and query as the gateway gets them; the proof's `htu` drops the query).
   */
  readonly proof?: (method: string, target: string, gateway: DpopGateway) => string;
  /**
   * DPoP-bound tokens only: told of every answer of `gateway`, keeps its `DPoP-Nonce` for the next
   * proofs; true when the answer is a `401` asking for a nonce (`use_dpop_nonce`, RFC 9449 §9)
   * and carrying one: the request may be sent again with a new proof.
   */
  readonly answered?: (gateway: DpopGateway, status: number, headers: Readonly<Record<string, string | string[] | undefined>>) => boolean;
}

/**
 * The authorization for a token just fetched: `Bearer`, or `DPoP` with proofs signed by the key
 * the token was bound to (a key rotation does not change it: the next token takes the new key).
 */
export function authorizationFor(grant: TokenGrant, dpop: DpopClient | undefined): Authorization {
  const token = grant.accessToken;
  const key = grant.dpopKey;
  if (dpop === undefined || key === undefined || grant.tokenType !== 'DPoP') return { token, header: `Bearer ${token}` };
  return {
    token,
    header: `DPoP ${token}`,
    proof: (method, target, gateway) => dpop.gatewayProof({ gateway, method, target, token, key }),
    answered: (gateway, status, headers) => dpop.gatewayAnswered(gateway, status, headers),
  };
}

/**
 * What the held token asks of whoever keeps it fresh (the refresh loop, refresh-loop.ts): a
 * token to wait for when none is held, and a new one when the gateway refuses the held one.
 */
export interface Renewal {
  /**
   * A token once one is held, waiting at most `TOKEN_WAIT_TIMEOUT_MS`; rejects when none can be had
   * in time (`token_unavailable`, or `invalid_client` for a rejected pass-through credential).
   */
  next(): Promise<Authorization>;
  /** The gateway answered 401 for the held token: drop it and fetch another; whether a replay can expect another. */
  refused(token: string): boolean;
}

/**
 * One credential's token as the request path uses it: the authorization of the token held now,
 * read synchronously by every request (one field read and a clock read), and never used in the
 * last `min(10 s, lifetime / 10)` of its life. Getting, refreshing and replacing it is the
 * refresh loop's job, behind {@link Renewal}; this is what a route's requests are authorised by.
 */
export class HeldToken {
  /** The held token's authorization, built once per token. */
  private auth: Authorization | undefined;
  /** Its last usable moment, by this proxy's clock. */
  private usableUntil = 0;

  constructor(
    private readonly clock: Clock,
    private readonly renewal: Renewal,
    /** With DPoP: a DPoP-bound token's authorization makes proofs with the key it is bound to. */
    private readonly dpop: DpopClient | undefined,
  ) {}

  /** How to authorise a request now, or undefined when no valid token is held. Synchronous: the hot path. */
  authorization(): Authorization | undefined {
    return this.auth !== undefined && this.clock.now() < this.usableUntil ? this.auth : undefined;
  }

  /** How to authorise a request: at once when a valid token is held, else once the refresh loop has one. */
  authorize(): Promise<Authorization> {
    const held = this.authorization();
    return held !== undefined ? Promise.resolve(held) : this.renewal.next();
  }

  /**
   * The gateway answered 401 for `token`: dropped and renewed if it is still the one held (a token
   * replaced meanwhile is answered at once). Returns whether a replay can expect a different token.
   */
  invalidate(token: string): boolean {
    return this.auth?.token !== token || this.renewal.refused(token);
  }

  /** The token held now (valid or not), for the refresh loop. */
  get token(): string | undefined {
    return this.auth?.token;
  }

  /** The held token's last usable moment (ms since the epoch); 0 when none is held. */
  get usableUntilMs(): number {
    return this.usableUntil;
  }

  /** Holds `grant` until `usableUntilMs`: the same token keeps its authorization; returns it. */
  hold(grant: TokenGrant, usableUntilMs: number): Authorization {
    if (this.auth?.token !== grant.accessToken) this.auth = authorizationFor(grant, this.dpop);
    this.usableUntil = usableUntilMs;
    return this.auth;
  }

  /** Drops the held token: no request uses it any more. */
  drop(): void {
    this.auth = undefined;
    this.usableUntil = 0;
  }
}
