import type { FetchOutcome } from './errors.js';

/** What the metrics see of one credential's token. */
export interface TokenState {
  /** When the held token expires (ms since the epoch), 0 when none is held. */
  readonly expiresAtMs: number;
  /** When the last fetch succeeded, 0 before the first. */
  readonly lastSuccessAtMs: number;
  readonly consecutiveFailures: number;
}

/** What a token source reports upward; the wiring hands an implementation in (telemetry/). */
export interface TokenSourceObserver {
  /** This proxy's own token request ended (a token taken from a shared store is no fetch). */
  onFetch?(outcome: FetchOutcome, durationS: number): void;
  /** A token was taken from the shared store instead of fetched. */
  onAdopt?(): void;
  onState?(state: TokenState): void;
}
