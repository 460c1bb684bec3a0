import type { Clock } from '../core/clock.js';
import { TokenUnavailableError } from '../core/errors.js';
import { TokenFetchError, type FetchOutcome } from './errors.js';
import type { Log } from '../core/log.js';
import { backoffDelay, DEFAULT_SCHEDULE, expiryMarginMs, type RefreshSchedule } from './refresh-schedule.js';
import type { Credential } from './client-auth/index.js';
import { authorizationFor, type Authorization } from './authorization.js';
import { asFetchError, logFetchFailure, type EndpointName } from './diagnose.js';
import type { DpopClient } from './dpop/index.js';
import type { FetchToken } from './fetch-token.js';
import type { TokenGrant } from './parse-response.js';
import { WaitingRequests } from './waiting-requests.js';

/** Forced refreshes after a gateway 401 happen at most this often per credential. */
export const FORCED_REFRESH_INTERVAL_MS = 5_000;

/** What the metrics see of one credential's token. */
export interface TokenState {
  /** When the held token expires (ms since the epoch), 0 when none is held. */
  readonly expiresAtMs: number;
  /** When the last fetch succeeded, 0 before the first. */
  readonly lastSuccessAtMs: number;
  readonly consecutiveFailures: number;
}

export interface TokenSourceObserver {
  onFetch?(outcome: FetchOutcome, durationS: number): void;
  onState?(state: TokenState): void;
}

export interface TokenSourceOptions {
  /** Names the credential in logs (never the client id or secret). */
  label: string;
  credential: Credential;
  fetchToken: FetchToken;
  clock: Clock;
  random: () => number;
  refreshRatio: number;
  waitTimeoutMs: number;
  log: Log;
  observer?: TokenSourceObserver | undefined;
  /** When to refresh and how far the backoff grows; {@link DEFAULT_SCHEDULE} unless given. */
  schedule?: RefreshSchedule | undefined;
  /** Where the token requests go, named (without userinfo) with every fetch failure logged. */
  endpoint?: EndpointName | undefined;
  /** Called once a failed fetch is handled: its retry scheduled, the waiting requests told. */
  onFailure?: ((error: TokenFetchError) => void) | undefined;
  /** With DPoP: a DPoP-bound token's authorization makes proofs with the key it is bound to. */
  dpop?: DpopClient | undefined;
}

/**
 * One credential's token: fetched ahead of need, refreshed in the background on its schedule
 * (`refresh-schedule.ts`: every refresh at a random moment between half the ratio and the ratio),
 * one fetch in flight at most, backoff with full jitter on failure, and never used in the last
 * `min(10 s, lifetime / 10)` of its life. A valid token is a synchronous field read.
 */
export class TokenSource {
  private readonly opts: TokenSourceOptions;
  private readonly clock: Clock;
  private readonly schedule: RefreshSchedule;
  private credential: Credential;
  private generation = 0;

  /** The held token's authorization, built once per token. */
  private auth: Authorization | undefined;
  private usableUntil = 0;
  private expiresAt = 0;
  private lastSuccessAt = 0;
  private failures = 0;
  private lastForcedAt = -Infinity;
  private inflight = false;
  private refreshTimer: unknown;
  private retryTimer: unknown;
  private nextAttemptAt: number | undefined;
  private readonly waiters: WaitingRequests;
  private stopped = false;
  /** The last failure, kept until the next success (pass-through credentials read `outcome`). */
  lastError: TokenFetchError | undefined;

  constructor(options: TokenSourceOptions) {
    this.opts = options;
    this.clock = options.clock;
    this.schedule = options.schedule ?? DEFAULT_SCHEDULE;
    this.credential = options.credential;
    this.waiters = new WaitingRequests(options.clock);
  }

  /** Starts the first fetch now, before any request needs the token. */
  start(): void {
    this.fetchNow();
  }

  /** The token to use now, or undefined when none is valid. Synchronous. */
  current(): string | undefined {
    return this.authorization()?.token;
  }

  /** How to authorise a request now, or undefined when no valid token is held. Synchronous: the hot path. */
  authorization(): Authorization | undefined {
    return this.auth !== undefined && this.clock.now() < this.usableUntil ? this.auth : undefined;
  }

  /** A valid token, as {@link authorize} gives it. */
  get(): Promise<string> {
    return this.authorize().then((auth) => auth.token);
  }

  /**
   * How to authorise a request: at once when a valid token is held, else after the fetch in
   * flight, waiting at most `waitTimeoutMs`; rejects with {@link TokenUnavailableError} (its
   * `cause` is the last fetch failure). Rejects at once when the next attempt is due only after
   * the wait would end.
   */
  authorize(): Promise<Authorization> {
    const held = this.authorization();
    if (held !== undefined) return Promise.resolve(held);
    if (this.stopped) return Promise.reject(this.unavailable('the proxy is shutting down', 1));
    if (!this.inflight && this.retryTimer === undefined) this.fetchNow();
    const now = this.clock.now();
    const deadline = now + this.opts.waitTimeoutMs;
    if (!this.inflight && this.nextAttemptAt !== undefined && this.nextAttemptAt > deadline) {
      return Promise.reject(this.unavailable('no valid token; the token endpoint is failing', (this.nextAttemptAt - now) / 1000));
    }
    return this.waiters.wait(this.opts.waitTimeoutMs, () => {
      const retryS = this.nextAttemptAt !== undefined ? (this.nextAttemptAt - this.clock.now()) / 1000 : 1;
      return this.unavailable(`no valid token within ${this.opts.waitTimeoutMs} ms`, retryS);
    });
  }

  /**
   * The gateway answered 401 for `token`. Drops it if it is still the current one and
   * fetches another, at most once per {@link FORCED_REFRESH_INTERVAL_MS}. Returns whether a
   * replay can expect a different token.
   */
  invalidate(token: string): boolean {
    if (this.auth?.token !== token) return true;
    const now = this.clock.now();
    if (now - this.lastForcedAt < FORCED_REFRESH_INTERVAL_MS) return false;
    this.lastForcedAt = now;
    this.auth = undefined;
    this.usableUntil = 0;
    this.expiresAt = 0;
    this.publishState();
    this.opts.log.warn({ credential: this.opts.label }, 'gateway rejected the token; fetching a new one');
    // While failing, the scheduled retry is the next try: the backoff and Retry-After hold.
    if (this.retryTimer === undefined) this.fetchNow();
    return true;
  }

  /** A new secret (or id): fetch with it at once; the held token stays in use meanwhile. */
  setCredential(credential: Credential): void {
    if (credential.clientId === this.credential.clientId && credential.clientSecret === this.credential.clientSecret) return;
    this.credential = credential;
    this.generation++;
    this.opts.log.info({ credential: this.opts.label }, 'secret reloaded; fetching a token with it');
    this.fetchNow();
  }

  /**
   * Material the token request is made with changed (a client certificate, an assertion key or
   * file): fetch at once; the held token stays in use meanwhile.
   */
  refreshNow(reason: string): void {
    this.generation++;
    this.opts.log.info({ credential: this.opts.label, reason }, 'fetching a token at once');
    this.fetchNow();
  }

  get state(): TokenState {
    return { expiresAtMs: this.expiresAt, lastSuccessAtMs: this.lastSuccessAt, consecutiveFailures: this.failures };
  }

  /** Stops timers and rejects waiting requests, telling them `why` (by default: shutdown). */
  stop(why = 'the proxy is shutting down'): void {
    this.stopped = true;
    this.clearTimers();
    this.waiters.settle((w) => w.reject(this.unavailable(why, 1)));
  }

  private fetchNow(): void {
    if (this.stopped || this.inflight) return;
    this.clearTimers();
    this.inflight = true;
    const startedAt = this.clock.now();
    const generation = this.generation;
    Promise.resolve(this.credential)
      .then(this.opts.fetchToken)
      .then(
        (grant) => this.onSuccess(grant, startedAt, generation),
        (err: unknown) => this.onFailure(err, startedAt, generation),
      )
      .catch((err: unknown) => this.opts.log.error({ err }, 'token source failed to handle a fetch result'));
  }

  private onSuccess(grant: TokenGrant, startedAt: number, generation: number): void {
    const now = this.clock.now();
    const lifetime = grant.lifetimeMs;
    if (now >= startedAt + lifetime - expiryMarginMs(lifetime)) {
      // Useless on arrival (a lifetime shorter than the fetch took): taken as it came, it would be
      // refreshed at once, again and again. A failure instead, so the backoff applies.
      const message = `token arrived with no usable life left (lifetime ${lifetime} ms, the fetch took ${now - startedAt} ms)`;
      this.onFailure(new TokenFetchError('invalid_response', message), startedAt, generation);
      return;
    }
    this.inflight = false;
    if (this.stopped) return;
    const auth = (this.auth = authorizationFor(grant, this.opts.dpop));
    this.expiresAt = startedAt + lifetime;
    this.usableUntil = this.expiresAt - expiryMarginMs(lifetime);
    this.lastSuccessAt = now;
    this.failures = 0;
    this.lastError = undefined;
    this.nextAttemptAt = undefined;
    this.opts.observer?.onFetch?.('success', (now - startedAt) / 1000);
    this.publishState();
    this.opts.log.info(
      { credential: this.opts.label, lifetimeS: Math.round(lifetime / 1000), durationMs: now - startedAt },
      'token fetched',
    );
    this.waiters.settle((w) => w.resolve(auth));
    if (generation !== this.generation) {
      this.fetchNow();
      return;
    }
    const offset = this.schedule.refreshOffsetMs(lifetime, this.opts.refreshRatio, this.opts.random);
    const refreshAt = Math.min(startedAt + offset, this.usableUntil);
    this.refreshTimer = this.clock.setTimeout(
      () => {
        this.refreshTimer = undefined;
        this.fetchNow();
      },
      Math.max(0, refreshAt - now),
    );
  }

  private onFailure(err: unknown, startedAt: number, generation: number): void {
    this.inflight = false;
    if (this.stopped) return;
    const now = this.clock.now();
    const error = asFetchError(err);
    this.failures++;
    this.lastError = error;
    this.opts.observer?.onFetch?.(error.outcome, (now - startedAt) / 1000);
    this.publishState();
    if (generation !== this.generation) this.fetchNow();
    else this.retryLater(err, error, now);
    this.opts.onFailure?.(error);
  }

  private retryLater(err: unknown, error: TokenFetchError, now: number): void {
    // While a valid token is held, the cap may grow with the time it has left.
    const validForMs = this.current() !== undefined ? this.usableUntil - now : 0;
    const delay = backoffDelay(this.failures, this.opts.random, error.retryAfterMs, this.schedule.backoffCapMs(validForMs));
    this.nextAttemptAt = now + delay;
    this.retryTimer = this.clock.setTimeout(() => {
      this.retryTimer = undefined;
      this.fetchNow();
    }, delay);
    logFetchFailure(this.opts.log, this.opts.label, this.opts.endpoint, err, {
      attempt: this.failures,
      retryInMs: delay,
      tokenValidForMs: validForMs,
    });
    // Requests that would still be waiting when the next attempt starts get their 503 now.
    const nextAttemptAt = now + delay;
    this.waiters.settle(
      (w) => w.reject(this.unavailable(`no valid token; ${error.message}`, delay / 1000)),
      (w) => w.deadline < nextAttemptAt,
    );
  }

  private unavailable(message: string, retryAfterS: number): TokenUnavailableError {
    return new TokenUnavailableError(message, retryAfterS, this.lastError ? { cause: this.lastError } : undefined);
  }

  private publishState(): void {
    this.opts.observer?.onState?.(this.state);
  }

  private clearTimers(): void {
    for (const timer of [this.refreshTimer, this.retryTimer]) if (timer !== undefined) this.clock.clearTimeout(timer);
    this.refreshTimer = this.retryTimer = undefined;
  }
}
