/**
 * Where a token source's next token comes from. The token source (token-source.ts) keeps the rules
 * for using a token: when it is refreshed, how long it is used, how a failure is retried. It
 * consults its supply at fixed points: when it needs a token, once a failed attempt has its retry
 * time, and when the gateway rejected a token. Without a shared store the supply is this proxy's
 * own fetch ({@link fetchingSupply}); with one, the store's entry, another proxy's fetch, or this
 * proxy's own under the store's lease (from-store/store-supply.ts).
 */
import type { Clock } from '../core/clock.js';
import type { Credential } from './client-auth/index.js';
import { asFetchError } from './diagnose.js';
import { TokenFetchError, type FetchOutcome } from './errors.js';
import type { FetchToken } from './fetch-token.js';
import type { TokenGrant } from './parse-response.js';
import { expiryMarginMs } from './refresh-schedule.js';

/** The token a source holds now, as its supply weighs a stored one against it. */
export interface HeldToken {
  readonly token: string;
  /** Its last usable moment, by this proxy's clock. */
  readonly usableUntilMs: number;
}

/** A token a supply hands over. Times are this proxy's clock's, a token from the store's included. */
export interface SuppliedToken {
  readonly grant: TokenGrant;
  /** When its request was sent: its lifetime, and so its refresh moment, count from here. */
  readonly issuedAtMs: number;
  readonly lifetimeMs: number;
  readonly expiresAtMs: number;
  /** Its last usable moment: the expiry less the margin in which a token is no longer used. */
  readonly usableUntilMs: number;
  /** How long this proxy's own fetch took; undefined for a token taken from the store. */
  readonly fetchMs: number | undefined;
  /** Shared through the store (fetched under its lease, or adopted): the store's narrower refresh schedule applies. */
  readonly shared: boolean;
}

/** What a token source consults; only `obtain` is required. */
export interface TokenSupply {
  /**
   * The next token for `credential`. `held` is the valid token the source holds, if any: a token
   * from the store replaces it only when usable for longer. Rejects with a {@link TokenFetchError}
   * (or what the client authentication threw) when no token can be had now.
   */
  obtain(credential: Credential, held: HeldToken | undefined): Promise<SuppliedToken>;
  /** The last attempt failed with `error`; the source tries again at `nextAttemptAtMs`. */
  failed?(error: TokenFetchError, nextAttemptAtMs: number): void;
  /** The gateway rejected `token` (answered 401 for it); it is never taken again. */
  rejected?(token: string): void;
  /** The source stops: nothing is waited for any more. */
  stop?(): void;
}

/** Counts this proxy's own token requests, by outcome (`ticket_auth_proxy_token_fetches_total`). */
export type FetchCounter = (outcome: FetchOutcome, durationS: number) => void;

/**
 * This proxy's own fetch: one token request, timed and counted. A token that arrives with no usable
 * life left (a lifetime shorter than the fetch took) is an `invalid_response`: taken as it came, it
 * would be refreshed at once, again and again; as a failure, the backoff applies.
 */
export function fetchingSupply(fetchToken: FetchToken, clock: Clock, count: FetchCounter | undefined): TokenSupply {
  return {
    async obtain(credential) {
      const sentAt = clock.now();
      try {
        const grant = await fetchToken(credential);
        const now = clock.now();
        const lifetime = grant.lifetimeMs;
        const expiresAt = sentAt + lifetime;
        const usableUntil = expiresAt - expiryMarginMs(lifetime);
        if (now >= usableUntil) {
          const message = `token arrived with no usable life left (lifetime ${lifetime} ms, the fetch took ${now - sentAt} ms)`;
          throw new TokenFetchError('invalid_response', message);
        }
        count?.('success', (now - sentAt) / 1000);
        return {
          grant,
          issuedAtMs: sentAt,
          lifetimeMs: lifetime,
          expiresAtMs: expiresAt,
          usableUntilMs: usableUntil,
          fetchMs: now - sentAt,
          shared: false,
        };
      } catch (err) {
        count?.(asFetchError(err).outcome, (clock.now() - sentAt) / 1000);
        throw err;
      }
    },
  };
}
