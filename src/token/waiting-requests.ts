import type { Clock } from '../core/clock.js';
import type { Authorization } from './authorization.js';

/** One request waiting for a token. */
export interface Waiter {
  resolve(auth: Authorization): void;
  reject(err: Error): void;
  /** When its wait is over (ms since the epoch). */
  readonly deadline: number;
}

interface Waiting extends Waiter {
  timer: unknown;
}

/**
 * The requests waiting for a token source's next token, each at most TOKEN_WAIT_TIMEOUT_MS: settled
 * when a token comes or a fetch fails, or rejected when its own wait is over.
 */
export class WaitingRequests {
  private waiting: Waiting[] = [];

  constructor(private readonly clock: Clock) {}

  /** A request that waits at most `timeoutMs`, then rejects with what `timedOut` makes. */
  wait(timeoutMs: number, timedOut: () => Error): Promise<Authorization> {
    return new Promise<Authorization>((resolve, reject) => {
      const waiter: Waiting = { resolve, reject, deadline: this.clock.now() + timeoutMs, timer: undefined };
      waiter.timer = this.clock.setTimeout(() => {
        this.waiting = this.waiting.filter((w) => w !== waiter);
        reject(timedOut());
      }, timeoutMs);
      this.waiting.push(waiter);
    });
  }

  /** Settles the waiting requests `pick` selects (every one by default); the others keep waiting. */
  settle(settle: (w: Waiter) => void, pick: (w: Waiter) => boolean = () => true): void {
    const picked = new Set(this.waiting.filter(pick));
    this.waiting = this.waiting.filter((w) => !picked.has(w));
    for (const w of picked) {
      this.clock.clearTimeout(w.timer);
      settle(w);
    }
  }
}
