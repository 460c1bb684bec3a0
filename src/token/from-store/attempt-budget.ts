/**
 * What the store may cost one attempt for a token before it fetches: one store timeout in all
 * (docs/token-store.md, "When the store goes wrong"). Each operation is bounded by the timeout on
 * its own; an attempt makes several one after another (the wait for a pass-through key's
 * derivation, the delete of a rejected token, the read, the lease), and a store that answered each
 * just in time would cost several. Past the budget the attempt fetches alone, and an operation
 * still under way is left to finish on its own (a lease it takes after all: store-supply.ts).
 * When the budget's timer fires, an answer that has already arrived is read first: a process held
 * off the CPU (a CPU limit) runs its due timers before it reads its sockets.
 */
import type { Clock } from '../../core/clock.js';

/** What an operation the budget ran out on answers instead. */
export const LATE = Symbol('late');

export interface AttemptBudget {
  /** What is left of it, in ms (0 once spent). */
  leftMs(): number;
  /** Starts `operation` if time is left, and answers what it does within what is left; `LATE` otherwise. */
  within<T>(operation: () => Promise<T>): Promise<T | typeof LATE>;
}

/** A budget of `ms` from now, on `clock`. */
export function attemptBudget(clock: Clock, ms: number): AttemptBudget {
  const end = clock.now() + ms;
  const leftMs = (): number => Math.max(0, end - clock.now());
  return {
    leftMs,
    within(operation) {
      const left = leftMs();
      if (left === 0) return Promise.resolve(LATE);
      const work = operation();
      return new Promise((resolve, reject) => {
        let immediate: NodeJS.Immediate | undefined;
        // One turn of the event loop: what arrived on the sockets meanwhile settles `work` first.
        const timer = clock.setTimeout(() => (immediate = setImmediate(() => resolve(LATE))), left);
        const stop = (): void => {
          clock.clearTimeout(timer);
          if (immediate !== undefined) clearImmediate(immediate);
        };
        work.then(
          (value) => {
            stop();
            resolve(value);
          },
          (err: unknown) => {
            stop();
            reject(err);
          },
        );
      });
    },
  };
}
