/**
 * Time enters the token lifecycle through this interface, so the refresh schedule, backoff and
 * jitter run on a fake clock in tests and on a simulated one in the fleet benchmark.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` after `ms`; the timer never keeps the process alive on its own. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node runs a timer longer than this after 1 ms instead (`TimeoutOverflowWarning`). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  // Date.now itself: reading the clock enters no function of ours.
  now: Date.now,
  setTimeout(fn, ms) {
    // Cut to the longest timer Node holds: a refresh of a token living for months comes early,
    // instead of at once and again after every fetch.
    const t = setTimeout(fn, Math.min(ms, MAX_TIMER_MS));
    t.unref();
    return t;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};
