import type { FetchOutcome, TokenFetchError } from './errors.js';

/** What the metrics and the readiness see of one credential's token. */
export interface TokenState {
  /** When the held token expires (ms since the epoch), 0 when none is held. */
  readonly expiresAtMs: number;
  /** The held token's last usable moment (ms since the epoch), 0 when none is held: valid until then. */
  readonly usableUntilMs: number;
  /** When the last fetch succeeded, 0 before the first. */
  readonly lastSuccessAtMs: number;
  readonly consecutiveFailures: number;
  /** The last failure, until the next success. */
  readonly lastError: TokenFetchError | undefined;
}

/** What a token source reports upward; the wiring hands an implementation in (telemetry/, the readiness). */
export interface TokenSourceObserver {
  /** This proxy's own token request ended (a token taken from a shared store is no fetch): its supply reports it. */
  onFetch?(outcome: FetchOutcome, durationS: number): void;
  /** A token was taken from the shared store instead of fetched. */
  onAdopt?(): void;
  /** The token's state changed: held, dropped, a fetch failed. */
  onState?(state: TokenState): void;
}
