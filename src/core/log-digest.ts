import type { Clock } from './clock.js';

/** How long a digest counts before it says what it counted. */
export const DIGEST_WINDOW_MS = 10_000;

/**
 * One event's log line said at most once per {@link DIGEST_WINDOW_MS}, however often it happens:
 * the first of a quiet spell is said whole, the rest are counted by kind, and the counts said in
 * one line when the window ends (then counted afresh while they keep coming). What a flood of
 * callers makes the proxy write is bounded by time, not by the flood.
 */
export class LogDigest {
  private counts = new Map<string, number>();
  private timer: unknown = undefined;

  constructor(
    private readonly clock: Clock,
    /** Says the counts of a window: `total` events beyond the first, by kind. */
    private readonly summarize: (total: number, byKind: Record<string, number>) => void,
  ) {}

  /** An event of `kind`: said by `say` when the digest is quiet, else counted. */
  note(kind: string, say: () => void): void {
    if (this.timer === undefined) {
      say();
      this.open();
      return;
    }
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  /** Says what is counted, and stops. */
  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.flush();
  }

  private open(): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      // Events kept coming: said, and the next window counts again; a quiet window closes the digest.
      if (this.flush()) this.open();
    }, DIGEST_WINDOW_MS);
  }

  private flush(): boolean {
    if (this.counts.size === 0) return false;
    let total = 0;
    for (const n of this.counts.values()) total += n;
    const byKind = Object.fromEntries(this.counts);
    this.counts = new Map();
    this.summarize(total, byKind);
    return true;
  }
}
