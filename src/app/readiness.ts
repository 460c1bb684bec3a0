import type { ReadinessState } from '../admin/server.js';
import type { Readiness as ReadinessMode } from '../config/config.js';
import { describeFetchFailure, type EndpointName } from '../token/diagnose.js';
import type { TokenSource } from '../token/token-source.js';

const READY: ReadinessState = { ready: true };

/**
 * What `/readyz` says (docs/operations.md, "The admin listener"): not ready while starting and
 * from the moment shutdown begins; in between, with a configured credential, ready while a valid
 * token is held (`READINESS=token`), or once the first token has been held (`READINESS=started`:
 * a sidecar's readiness is its whole pod's, and an identity-provider outage that outlasts a token
 * must not take every pod out of its Service; the reason then comes with the ready answer).
 * With only pass-through credentials no token is waited for.
 */
export class Readiness {
  private listening = false;
  private stopping = false;
  private tokenHeld = false;

  constructor(
    private readonly mode: ReadinessMode,
    private readonly configured: TokenSource | undefined,
    private readonly endpoint: EndpointName,
  ) {}

  /** Both listeners are up. */
  listen(): void {
    this.listening = true;
  }

  /** Shutdown has begun: not ready from now on, whatever the mode. */
  stop(): void {
    this.stopping = true;
  }

  /** The answer now. */
  readonly check = (): ReadinessState => {
    if (this.stopping) return { ready: false, reason: 'shutting down' };
    if (!this.listening) return { ready: false, reason: 'starting' };
    const source = this.configured;
    if (source === undefined) return READY;
    if (source.current() !== undefined) {
      this.tokenHeld = true;
      return READY;
    }
    // A token fetched once counts as held even when it expired unseen by a probe.
    if (source.state.lastSuccessAtMs > 0) this.tokenHeld = true;
    const reason = this.noTokenReason(source);
    return this.mode === 'started' && this.tokenHeld ? { ready: true, reason } : { ready: false, reason };
  };

  private noTokenReason(source: TokenSource): string {
    const last = source.lastError;
    if (last === undefined) return this.tokenHeld ? 'no valid token' : 'no valid token yet';
    const failure = describeFetchFailure(last, this.endpoint);
    return `no valid token (last fetch: ${failure.outcome}: ${failure.text})`;
  }
}
