/**
 * A token's schedule: when it stops being used, when it is refreshed, and how long a failed
 * fetch waits before the next (docs/forwarding.md, "The token: refresh and backoff"). Pure
 * functions of the lifetime and a random number, so the token source's lifecycle is tested on a
 * fake clock.
 */
import { RETRY_AFTER_CAP_MS } from './parse-response.js';

/**
 * Exponential backoff with full jitter: about 0.5 s, doubling, capped at 30 s, or at
 * {@link backoffCapMs} while a valid token is held.
 */
export const BACKOFF_BASE_MS = 500;
export const BACKOFF_CAP_MS = 30_000;

/**
 * The backoff cap while the held token is usable for `validForMs` more: a quarter of that, never
 * below 30 s; 30 s without a valid token. A quarter never reaches past the last usable moment;
 * in a token's last 30 s the 30 s floor wins (a quarter and at least 30 s cannot both
 * hold there), so a failing endpoint is not retried ever faster as the token runs out.
 */
export function backoffCapMs(validForMs: number): number {
  return Math.max(BACKOFF_CAP_MS, validForMs / 4);
}

/**
 * The wait before retry number `attempt` (1 for the first retry): uniformly random in
 * `[0, min(cap, base * 2^(attempt-1))]`, and never less than the server's `Retry-After`.
 */
export function backoffDelay(attempt: number, random: () => number, retryAfterMs?: number, capMs = BACKOFF_CAP_MS): number {
  const ceiling = Math.min(capMs, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 1));
  const delay = Math.floor(random() * ceiling);
  return retryAfterMs === undefined ? delay : Math.max(delay, retryAfterMs);
}

/** The last `min(10 s, lifetime / 10)` of a token's life in which it is no longer used. */
export function expiryMarginMs(lifetimeMs: number): number {
  return Math.min(10_000, lifetimeMs / 10);
}

/**
 * When a background refresh starts, as an offset from when the token was requested. The first of a
 * token source (a process's first refresh): uniformly between half of `ratio` and `ratio` of the
 * lifetime (40-80 % by default), so a fleet started at once loses its lock-step within one
 * lifetime, at the cost of one early fetch. Every later one: at the ratio less up to a tenth of the
 * lifetime, never later; the phases the first spread stay spread, each refresh moving its own by
 * up to a tenth at random. The first window covers about half of the later refresh period, so a
 * fleet started at once still fetches in a broad wave one period later: `npm run bench:fleet`
 * shows the second hour's busiest minute at about 2.2x its mean, the later hours' within 2x.
 */
export function refreshOffsetMs(lifetimeMs: number, ratio: number, random: () => number, first: boolean): number {
  return first ? lifetimeMs * ratio * (1 - random() / 2) : Math.max(0, lifetimeMs * ratio - random() * 0.1 * lifetimeMs);
}

/** When a token source refreshes and how far its backoff may grow (`npm run bench:fleet` injects another). */
export interface RefreshSchedule {
  /** The refresh's offset from when the token was requested; `first`: the source's first refresh. */
  refreshOffsetMs(lifetimeMs: number, ratio: number, random: () => number, first: boolean): number;
  /** The backoff cap while the held token is usable for `validForMs` more (0 when none is held). */
  backoffCapMs(validForMs: number): number;
}

/**
 * The product's schedule: the first refresh of a process spread uniformly between half the ratio
 * and the ratio (a fleet restarted at once loses its lock-step), the later ones at the ratio less
 * up to a tenth; the backoff cap grows with the held token's usable life.
 */
export const DEFAULT_SCHEDULE: RefreshSchedule = { refreshOffsetMs, backoffCapMs };

/**
 * The schedule of a token shared through a store (docs/token-store.md): every
 * refresh at the ratio less a jitter of up to a tenth of the lifetime, never later. The wide
 * window of {@link refreshOffsetMs} spreads a fleet's own fetches; with a store the lease does:
 * the first proxy to reach the refresh moment fetches for all, the others take its token, so an
 * earlier refresh would only add fetches (one per refresh period: at most 1/0.7 per lifetime with
 * the default ratio).
 */
export const STORE_SCHEDULE: RefreshSchedule = {
  refreshOffsetMs: (lifetimeMs, ratio, random) => Math.max(0, lifetimeMs * ratio - random() * 0.1 * lifetimeMs),
  backoffCapMs,
};

/** How long a failed attempt waits before the next, as a supply applies it. */
export interface BackoffPolicy {
  /**
   * The wait before attempt `attempt` (1: the first retry) after a failure that asked for
   * `retryAfterMs` at least, while the held token is usable for `validForMs` more (0 when none is held).
   */
  delayMs(attempt: number, failure: { readonly retryAfterMs: number | undefined }, validForMs: number): number;
  /**
   * The longest wait {@link delayMs} could give while the held token is usable for `validForMs`
   * more: its cap, or, after a failure that may carry a `Retry-After` (a 429 or a 503), that
   * header's cap when longer. A wait someone else imposes (a failure another proxy recorded) is
   * honoured no longer than this.
   */
  longestMs(validForMs: number, withRetryAfter: boolean): number;
}

/**
 * Exponential backoff with full jitter, capped as `schedule` says, never less than a `Retry-After`
 * (itself at most {@link RETRY_AFTER_CAP_MS}).
 */
export function backoffPolicy(schedule: RefreshSchedule, random: () => number): BackoffPolicy {
  return {
    delayMs: (attempt, failure, validForMs) => backoffDelay(attempt, random, failure.retryAfterMs, schedule.backoffCapMs(validForMs)),
    longestMs: (validForMs, withRetryAfter) => Math.max(schedule.backoffCapMs(validForMs), withRetryAfter ? RETRY_AFTER_CAP_MS : 0),
  };
}
