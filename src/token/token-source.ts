import type { Clock } from '../core/clock.js';
import { TokenUnavailableError } from '../core/errors.js';
import type { TokenFetchError } from './errors.js';
import type { TokenSourceObserver, TokenState } from './token-state.js';
import type { Log } from '../core/log.js';
import { backoffPolicy, DEFAULT_SCHEDULE, type BackoffPolicy, type RefreshSchedule } from './refresh-schedule.js';
import type { Credential } from './client-auth/index.js';
import { authorizationFor, type Authorization } from './authorization.js';
import { asFetchError, logFetchFailure, type EndpointName } from './diagnose.js';
import type { DpopClient } from './dpop/index.js';
import type { FetchToken } from './fetch-token.js';
import { fetchingSupply, SupplyFailure, type SuppliedToken, type TokenSupply } from './token-supply.js';
import { WaitingRequests } from './waiting-requests.js';

/** Forced refreshes after a gateway 401 happen at most this often per credential. */
export const FORCED_REFRESH_INTERVAL_MS = 5_000;
/** Tokens the gateway rejected, remembered so that none is taken from a shared store again. */
const REJECTED_KEPT = 8;

export type { TokenSourceObserver, TokenState } from './token-state.js';

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
  /** With a shared token store: the supply around this proxy's own fetch, with this source's backoff (token/from-store/). */
  withStore?: ((own: TokenSupply, backoff: BackoffPolicy) => TokenSupply) | undefined;
}

/**
 * One credential's token: obtained ahead of need, refreshed in the background on its schedule
 * (`refresh-schedule.ts`: every refresh at a random moment between half the ratio and the ratio;
 * a token shared through a store at the ratio less up to a tenth), one attempt in flight at most,
 * backoff with full jitter on failure, and never used in the last `min(10 s, lifetime / 10)` of
 * its life. Where a token comes from is its supply's business (token-supply.ts). A valid token is
 * a synchronous field read.
 */
export class TokenSource {
  private readonly opts: TokenSourceOptions;
  private readonly clock: Clock;
  private readonly schedule: RefreshSchedule;
  private readonly supply: TokenSupply;
  private readonly backoff: BackoffPolicy;
  /** Tokens the gateway rejected, newest last: none is taken from a shared store again. */
  private readonly rejected: string[] = [];
  private readonly stopping = new AbortController();
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
    const { clock, schedule } = this;
    const { observer } = options;
    const backoff = (this.backoff = backoffPolicy(schedule, options.random));
    const own = fetchingSupply(options.fetchToken, { clock, count: observer?.onFetch?.bind(observer), backoff, schedule });
    this.supply = options.withStore?.(own, backoff) ?? own;
  }

  /** Starts the first fetch now, before any request needs the token. */
  start(): void {
    // Nothing held yet: said before the first fetch, so that a token never obtained shows.
    this.publishState();
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
    this.rejected.push(token);
    if (this.rejected.length > REJECTED_KEPT) this.rejected.shift();
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
    this.stopping.abort();
    this.waiters.settle((w) => w.reject(this.unavailable(why, 1)));
  }

  private fetchNow(): void {
    if (this.stopped || this.inflight) return;
    this.clearTimers();
    this.inflight = true;
    const generation = this.generation;
    const held = this.authorization();
    this.supply
      .obtain({
        credential: this.credential,
        held: held && { token: held.token, usableUntilMs: this.usableUntil },
        failures: this.failures,
        rejected: this.rejected,
        signal: this.stopping.signal,
      })
      .then(
        (supplied) => this.onSuccess(supplied, generation),
        (err: unknown) => this.onFailure(err, generation),
      )
      .catch((err: unknown) => this.opts.log.error({ err }, 'token source failed to handle a fetch result'));
  }

  private onSuccess(supplied: SuppliedToken, generation: number): void {
    this.inflight = false;
    if (this.stopped) return;
    const now = this.clock.now();
    const { grant, lifetimeMs: lifetime } = supplied;
    const adopted = supplied.fetchMs === undefined;
    const same = this.auth?.token === grant.accessToken;
    const auth = (this.auth = same ? this.auth! : authorizationFor(grant, this.opts.dpop));
    this.expiresAt = supplied.expiresAtMs;
    this.usableUntil = supplied.usableUntilMs;
    this.lastSuccessAt = adopted ? supplied.issuedAtMs : now;
    this.failures = 0;
    this.lastError = undefined;
    this.nextAttemptAt = undefined;
    if (adopted && !same) this.opts.observer?.onAdopt?.();
    this.publishState();
    const logged = { credential: this.opts.label, lifetimeS: Math.round(lifetime / 1000) };
    if (!adopted) this.opts.log.info({ ...logged, durationMs: supplied.fetchMs }, 'token fetched');
    else if (!same)
      this.opts.log.info({ ...logged, usableForS: Math.round((this.usableUntil - now) / 1000) }, 'token taken from the store');
    this.waiters.settle((w) => w.resolve(auth));
    if (generation !== this.generation) {
      this.fetchNow();
      return;
    }
    const offset = supplied.schedule.refreshOffsetMs(lifetime, this.opts.refreshRatio, this.opts.random);
    const refreshAt = Math.min(supplied.issuedAtMs + offset, this.usableUntil);
    this.refreshTimer = this.clock.setTimeout(
      () => {
        this.refreshTimer = undefined;
        this.fetchNow();
      },
      Math.max(0, refreshAt - now),
    );
  }

  private onFailure(failure: unknown, generation: number): void {
    this.inflight = false;
    if (this.stopped) return;
    const now = this.clock.now();
    // The supply says when to try again; anything else it threw is a failure of this attempt alone.
    const err = failure instanceof SupplyFailure ? failure.cause : failure;
    const error = asFetchError(err);
    const validForMs = this.current() !== undefined ? this.usableUntil - now : 0;
    this.failures++;
    this.lastError = error;
    this.publishState();
    if (generation !== this.generation) this.fetchNow();
    else {
      const nextAttemptAt =
        failure instanceof SupplyFailure ? failure.nextAttemptAtMs : now + this.backoff.delayMs(this.failures, error, validForMs);
      this.retryLater(err, error, now, Math.max(0, nextAttemptAt - now), validForMs);
    }
    this.opts.onFailure?.(error);
  }

  private retryLater(err: unknown, error: TokenFetchError, now: number, delay: number, validForMs: number): void {
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
