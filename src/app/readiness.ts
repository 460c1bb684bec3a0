import type { ReadinessState } from '../admin/server.js';
import type { Readiness as ReadinessMode } from '../config/config.js';
import type { Clock } from '../core/clock.js';
import { describeFetchFailure, type EndpointName } from '../token/diagnose.js';
import type { TokenSourceObserver, TokenState } from '../token/token-state.js';

const READY: ReadinessState = { ready: true };

/** A configured credential's token as the readiness last heard of it. */
interface CredentialToken {
  readonly endpoint: EndpointName;
  /** Its state as its refresh loop last reported it; undefined before the loop starts. */
  state: TokenState | undefined;
  /** A token was held once (a token fetched counts even when it expired unseen by a probe). */
  held: boolean;
}

/**
 * What `/readyz` says (docs/operations.md, "The admin listener"): not ready while starting and
 * from the moment shutdown begins; in between, with a configured credential, ready while a valid
 * token is held (`READINESS=token`), or once the first token has been held (`READINESS=started`:
 * a sidecar's readiness is its whole pod's, and an identity-provider outage that outlasts a token
 * must not take every pod out of its Service; the reason then comes with the ready answer).
 * With only pass-through credentials no token is waited for. A credential's token state comes
 * through the observer its refresh loop reports to ({@link Readiness.credential}).
 */
export class Readiness {
  private listening = false;
  private stopping = false;
  private readonly credentials: CredentialToken[] = [];

  constructor(
    private readonly mode: ReadinessMode,
    private readonly clock: Clock,
  ) {}

  /**
   * A configured credential to wait for, whose token requests go to `endpoint`: returns the
   * observer its refresh loop reports to, which tells `next` (the metrics) too.
   */
  credential(endpoint: EndpointName, next: TokenSourceObserver): TokenSourceObserver {
    const credential: CredentialToken = { endpoint, state: undefined, held: false };
    this.credentials.push(credential);
    return {
      onFetch: next.onFetch,
      onAdopt: next.onAdopt,
      onState(state) {
        credential.state = state;
        if (state.lastSuccessAtMs > 0) credential.held = true;
        next.onState?.(state);
      },
    };
  }

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
    const credential = this.credentials[0];
    if (credential === undefined) return READY;
    const state = credential.state;
    if (state !== undefined && this.clock.now() < state.usableUntilMs) {
      credential.held = true;
      return READY;
    }
    const reason = noTokenReason(credential);
    return this.mode === 'started' && credential.held ? { ready: true, reason } : { ready: false, reason };
  };
}

function noTokenReason(credential: CredentialToken): string {
  const last = credential.state?.lastError;
  if (last === undefined) return credential.held ? 'no valid token' : 'no valid token yet';
  const failure = describeFetchFailure(last, credential.endpoint);
  return `no valid token (last fetch: ${failure.outcome}: ${failure.text})`;
}
