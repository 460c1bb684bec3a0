/**
 * Where a token source's next token comes from. The token source (token-source.ts) keeps the rules
 * for using a token: when it is refreshed, how long it is used. It asks its supply for a token
 * with one method, {@link TokenSupply.obtain}, which either hands a token over or says when to try
 * again: the supply owns every step of getting a token, its failures included. Without a shared
 * store the supply is this proxy's own fetch ({@link fetchingSupply}); with one, the store's
 * entry, another proxy's fetch, or this proxy's own under the store's lease (from-store/).
 */
import type { Clock } from '../core/clock.js';
import type { Credential } from './client-auth/index.js';
import { asFetchError } from './diagnose.js';
import { TokenFetchError, type FetchOutcome } from './errors.js';
import type { FetchToken } from './fetch-token.js';
import type { TokenGrant } from './parse-response.js';
import { expiryMarginMs, type BackoffPolicy, type RefreshSchedule } from './refresh-schedule.js';

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
  /** When it is refreshed: the schedule of the supply that handed it over. */
  readonly schedule: RefreshSchedule;
}

/** What a token source asks its supply for. */
export interface SupplyRequest {
  readonly credential: Credential;
  /** The valid token the source holds, if any: a token from the store replaces it only when usable for longer. */
  readonly held: HeldToken | undefined;
  /** The attempts that failed in a row before this one: the backoff's step. */
  readonly failures: number;
  /** Aborted when the source stops: nothing is waited for any more. */
  readonly signal: AbortSignal;
}

/**
 * No token now: `cause` is why (a {@link TokenFetchError}, or what the client authentication
 * threw), `nextAttemptAtMs` when the source tries again (by this proxy's clock). Whatever the supply
 * held for the attempt (a shared store's lease) is given up before this is thrown.
 */
export class SupplyFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly nextAttemptAtMs: number,
  ) {
    super(asFetchError(cause).message, { cause });
  }
}

/** What a token source consults. */
export interface TokenSupply {
  /**
   * The next token for `request.credential`. Rejects with a {@link SupplyFailure} when no token can
   * be had now, saying when to try again; never holds anything once settled.
   */
  obtain(request: SupplyRequest): Promise<SuppliedToken>;
  /**
   * The gateway rejected `token` (answered 401 for it): a shared store's supply never hands it over
   * again, and deletes it from the store at its next attempt if it is still there; this proxy's own
   * fetch has nothing to do.
   */
  rejected(token: string): void;
}

/** What a supply is built with. */
export interface SupplyOptions {
  clock: Clock;
  /** Counts this proxy's own token requests. */
  count?: FetchCounter | undefined;
  /** How long a failed attempt waits before the next. */
  backoff: BackoffPolicy;
  /** The refresh schedule of the tokens it fetches. */
  schedule: RefreshSchedule;
}

/** Counts this proxy's own token requests, by outcome (`ticket_auth_proxy_token_fetches_total`). */
export type FetchCounter = (outcome: FetchOutcome, durationS: number) => void;

/**
 * This proxy's own fetch: one token request, timed and counted. A token that arrives with no usable
 * life left (a lifetime shorter than the fetch took) is an `invalid_response`: taken as it came, it
 * would be refreshed at once, again and again; as a failure, the backoff applies.
 */
export function fetchingSupply(fetchToken: FetchToken, options: SupplyOptions): TokenSupply {
  const { clock, count, backoff, schedule } = options;
  return {
    rejected() {},
    async obtain({ credential, held, failures }) {
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
          schedule,
        };
      } catch (err) {
        const error = asFetchError(err);
        const now = clock.now();
        count?.(error.outcome, (now - sentAt) / 1000);
        // While a valid token is held, the backoff's cap may grow with the time it has left.
        const validForMs = held !== undefined && held.usableUntilMs > now ? held.usableUntilMs - now : 0;
        throw new SupplyFailure(err, now + backoff.delayMs(failures + 1, error, validForMs));
      }
    },
  };
}
