import type { Clock } from '../../src/core/clock.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/** Lets every promise chain that is ready run to its end (a macrotask drains all microtasks). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * A clock that moves only when told. `advance(ms)` runs the timers that fall due in order of
 * their due time (then of their creation), letting promise chains settle after each one.
 */
export class FakeClock implements Clock {
  private time: number;
  private seq = 0;
  private readonly timers = new Map<number, Timer>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const seq = ++this.seq;
    this.timers.set(seq, { at: this.time + Math.max(0, ms), seq, fn });
    return seq;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Timers not yet run nor cleared. */
  get pending(): number {
    return this.timers.size;
  }

  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await settle();
    for (let runs = 0; ; runs++) {
      if (runs > 100_000) throw new Error('FakeClock: timers keep falling due; is something rescheduling itself at once?');
      let next: Timer | undefined;
      for (const t of this.timers.values()) {
        if (t.at <= end && (next === undefined || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      }
      if (next === undefined) break;
      this.timers.delete(next.seq);
      this.time = Math.max(this.time, next.at);
      next.fn();
      await settle();
    }
    this.time = end;
    await settle();
  }
}
