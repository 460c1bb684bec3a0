import type { ReadinessState, RouteReadiness } from '../admin/server.js';
import type { Readiness as ReadinessMode } from '../config/config.js';
import type { Clock } from '../core/clock.js';
import { describeFetchFailure, type EndpointName } from '../token/diagnose.js';
import type { TokenSourceObserver, TokenState } from '../token/token-state.js';

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
 * from the moment shutdown begins; in between, ready when every route is. A route with a
 * configured credential is ready while a valid token is held (`READINESS=token`), or once the
 * first token has been held (`READINESS=started`: a sidecar's readiness is its whole pod's, and
 * an identity-provider outage that outlasts a token must not take every pod out of its Service;
 * the reason then comes with the ready answer). A route with only pass-through credentials waits
 * for no token. A credential's token state comes through the observer its refresh loop reports to
 * ({@link Readiness.credential}); routes that share a credential share its state.
 */
export class Readiness {
  private listening = false;
  private stopping = false;
  /** Each route, by name, with its configured credential when it has one. */
  private readonly routes = new Map<string, CredentialToken | undefined>();

  constructor(
    private readonly mode: ReadinessMode,
    private readonly clock: Clock,
  ) {}

  /** A route with pass-through credentials alone: ready once the listeners are. */
  route(name: string): void {
    if (!this.routes.has(name)) this.routes.set(name, undefined);
  }

  /**
   * The configured credential of the route `name`, whose token requests go to `endpoint`: returns
   * the observer its refresh loop reports to, which tells `next` (the metrics) too.
   */
  credential(name: string, endpoint: EndpointName, next: TokenSourceObserver): TokenSourceObserver {
    const credential: CredentialToken = { endpoint, state: undefined, held: false };
    this.routes.set(name, credential);
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

  /** Another route holds the same credential as `first`: it is ready when that one is. */
  sameCredential(name: string, first: string): void {
    this.routes.set(name, this.routes.get(first));
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
    const routes: Record<string, RouteReadiness> = {};
    let ready = true;
    let reason: string | undefined;
    for (const [name, credential] of this.routes) {
      const r = this.routeNow(credential);
      routes[name] = r;
      if (!r.ready) ready = false;
      // The first reason, named by its route when there are several.
      if (reason === undefined && r.reason !== undefined) reason = this.routes.size > 1 ? `${name}: ${r.reason}` : r.reason;
    }
    if (this.stopping) return { ready: false, reason: 'shutting down', routes };
    if (!this.listening) return { ready: false, reason: 'starting', routes };
    return reason === undefined ? { ready, routes } : { ready, reason, routes };
  };

  private routeNow(credential: CredentialToken | undefined): RouteReadiness {
    if (this.stopping) return { ready: false, reason: 'shutting down' };
    if (!this.listening) return { ready: false, reason: 'starting' };
    if (credential === undefined) return { ready: true };
    const state = credential.state;
    if (state !== undefined && this.clock.now() < state.usableUntilMs) {
      credential.held = true;
      return { ready: true };
    }
    const reason = noTokenReason(credential);
    return this.mode === 'started' && credential.held ? { ready: true, reason } : { ready: false, reason };
  }
}

function noTokenReason(credential: CredentialToken): string {
  const last = credential.state?.lastError;
  if (last === undefined) return credential.held ? 'no valid token' : 'no valid token yet';
  const failure = describeFetchFailure(last, credential.endpoint);
  return `no valid token (last fetch: ${failure.outcome}: ${failure.text})`;
}
