import type { Clock } from '../core/clock.js';
import { TokenUnavailableError, type ProxyError } from '../core/errors.js';
import type { Log } from '../core/log.js';
import type { Credential } from './client-auth/index.js';
import { asFetchError, logFetchFailure, type EndpointName, type FetchFailure } from './diagnose.js';
import type { DpopClient } from './dpop/index.js';
import type { TokenFetchError } from './errors.js';
import { HeldToken, type Authorization, type Renewal } from './held-token.js';
import type { BackoffPolicy } from './refresh-schedule.js';
import { SupplyFailure, type SuppliedToken, type TokenSupply } from './token-supply.js';
import type { TokenSourceObserver, TokenState } from './token-state.js';

/** Forced refreshes after a gateway 401 happen at most this often per credential. */
export const FORCED_REFRESH_INTERVAL_MS = 5_000;

export interface RefreshLoopOptions {
  /** Names the credential in logs (never the client id or secret). */
  label: string;
  /** The route it serves (the first of them, when routes share the credential), named in its log lines. */
  route?: string | undefined;
  credential: Credential;
  /** Where each token comes from: this proxy's fetch, or a shared store around it (token-supply.ts). */
  supply: TokenSupply;
  /** How long a failed attempt waits before the next (the supply's too). */
  backoff: BackoffPolicy;
  clock: Clock;
  /** The refresh moment's jitter. */
  random: () => number;
  /** `TOKEN_REFRESH_RATIO`. */
  refreshRatio: number;
  /** `TOKEN_WAIT_TIMEOUT_MS`: the longest a request waits for a token. */
  waitTimeoutMs: number;
  log: Log;
  /** Where the token requests go, named (without userinfo) with every fetch failure logged. */
  endpoint?: EndpointName | undefined;
  /** The one way the loop reports upward: the token's state, and tokens taken from a store. */
  observer?: TokenSourceObserver | undefined;
  /** With DPoP: a DPoP-bound token's authorization makes proofs with the key it is bound to. */
  dpop?: DpopClient | undefined;
  /**
   * What a waiting request is answered once the token endpoint has rejected the credential: a
   * pass-through credential's caller hears `invalid_client`; the configured credential's
   * `token_unavailable` (the default).
   */
  whenRejected?: (() => ProxyError) | undefined;
  /** Where each failed attempt is said: by default one log line each (diagnose.ts). */
  reportFailure?: ((failure: FetchFailure) => void) | undefined;
}

/**
 * One credential's token kept fresh: obtained ahead of need, refreshed in the background on the
 * schedule of the supply that handed it over (refresh-schedule.ts: the first refresh at a random
 * moment between half the ratio and the ratio, the later ones at the ratio less up to a tenth; a
 * token shared through a store always so), one attempt in flight at most, backoff with full
 * jitter on failure. Requests
 * read the token it holds through {@link RefreshLoop.held}; this loop owns the timers, the
 * backoff, the credential's generations and the requests waiting for a token.
 */
export class RefreshLoop implements Renewal {
  /** The token as requests read it. */
  readonly held: HeldToken;
  private readonly o: RefreshLoopOptions;
  private readonly clock: Clock;
  private readonly stopping = new AbortController();
  private readonly waiters: WaitingRequests;
  private credential: Credential;
  /** Bumped when the credential's material changes: an attempt of an older generation is followed by a new one. */
  private generation = 0;
  private expiresAt = 0;
  private lastSuccessAt = 0;
  private failures = 0;
  private lastError: TokenFetchError | undefined;
  private lastForcedAt = -Infinity;
  private inflight = false;
  private refreshTimer: unknown;
  private retryTimer: unknown;
  private nextAttemptAt: number | undefined;
  private stopped = false;

  constructor(options: RefreshLoopOptions) {
    this.o = options;
    this.clock = options.clock;
    this.credential = options.credential;
    this.waiters = new WaitingRequests(options.clock);
    this.held = new HeldToken(options.clock, this, options.dpop);
  }

  /** Starts the first fetch now, before any request needs the token. */
  start(): void {
    // Nothing held yet: said before the first fetch, so that a token never obtained shows.
    this.publishState();
    this.fetchNow();
  }

  /**
   * A token once one is held: after the attempt in flight (or one started now), waiting at most
   * `waitTimeoutMs`; rejects with {@link TokenUnavailableError} (its `cause` is the last fetch
   * failure). Rejects at once when the next attempt is due only after the wait would end.
   */
  next(): Promise<Authorization> {
    const held = this.held.authorization();
    if (held !== undefined) return Promise.resolve(held);
    if (this.stopped) return Promise.reject(this.unavailable('the proxy is shutting down', 1));
    if (!this.inflight && this.retryTimer === undefined) this.fetchNow();
    const now = this.clock.now();
    const deadline = now + this.o.waitTimeoutMs;
    if (!this.inflight && this.nextAttemptAt !== undefined && this.nextAttemptAt > deadline) {
      return Promise.reject(this.unavailable('no valid token; the token endpoint is failing', (this.nextAttemptAt - now) / 1000));
    }
    return this.waiters.wait(this.o.waitTimeoutMs, () => {
      const retryS = this.nextAttemptAt !== undefined ? (this.nextAttemptAt - this.clock.now()) / 1000 : 1;
      return this.unavailable(`no valid token within ${this.o.waitTimeoutMs} ms`, retryS);
    });
  }

  /**
   * The gateway answered 401 for the held token `token`: drops it and fetches another, at most
   * once per {@link FORCED_REFRESH_INTERVAL_MS}; the supply is told, so that a shared store never
   * hands it over again. Returns whether a replay can expect a different token.
   */
  refused(token: string): boolean {
    const now = this.clock.now();
    if (now - this.lastForcedAt < FORCED_REFRESH_INTERVAL_MS) return false;
    this.lastForcedAt = now;
    this.o.supply.rejected(token);
    this.held.drop();
    this.expiresAt = 0;
    this.publishState();
    this.o.log.warn({ route: this.o.route, credential: this.o.label }, 'gateway rejected the token; fetching a new one');
    // While failing, the scheduled retry is the next try: the backoff and Retry-After hold.
    if (this.retryTimer === undefined) this.fetchNow();
    return true;
  }

  /** A new secret (or id): fetch with it at once; the held token stays in use meanwhile. */
  setCredential(credential: Credential): void {
    if (credential.clientId === this.credential.clientId && credential.clientSecret === this.credential.clientSecret) return;
    this.credential = credential;
    this.generation++;
    this.o.log.info({ route: this.o.route, credential: this.o.label }, 'secret reloaded; fetching a token with it');
    this.fetchNow();
  }

  /**
   * Material the token request is made with changed (a client certificate, an assertion key or
   * file): fetch at once; the held token stays in use meanwhile.
   */
  refreshNow(reason: string): void {
    this.generation++;
    this.o.log.info({ route: this.o.route, credential: this.o.label, reason }, 'fetching a token at once');
    this.fetchNow();
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
    const held = this.held.authorization();
    this.o.supply
      .obtain({
        credential: this.credential,
        held: held && { token: held.token, usableUntilMs: this.held.usableUntilMs },
        failures: this.failures,
        signal: this.stopping.signal,
      })
      .then(
        (supplied) => this.onSuccess(supplied, generation),
        (err: unknown) => this.onFailure(err, generation),
      )
      .catch((err: unknown) => this.o.log.error({ err }, 'token source failed to handle a fetch result'));
  }

  private onSuccess(supplied: SuppliedToken, generation: number): void {
    this.inflight = false;
    if (this.stopped) return;
    const now = this.clock.now();
    const { grant, lifetimeMs: lifetime } = supplied;
    const adopted = supplied.fetchMs === undefined;
    const same = this.held.token === grant.accessToken;
    // Its first token: the refresh after it is the source's first, spread widest (refresh-schedule.ts).
    const first = this.lastSuccessAt === 0;
    const auth = this.held.hold(grant, supplied.usableUntilMs);
    this.expiresAt = supplied.expiresAtMs;
    this.lastSuccessAt = adopted ? supplied.issuedAtMs : now;
    this.failures = 0;
    this.lastError = undefined;
    this.nextAttemptAt = undefined;
    if (adopted && !same) this.o.observer?.onAdopt?.();
    this.publishState();
    const logged = { route: this.o.route, credential: this.o.label, lifetimeS: Math.round(lifetime / 1000) };
    if (!adopted) this.o.log.info({ ...logged, durationMs: supplied.fetchMs }, 'token fetched');
    else if (!same)
      this.o.log.info({ ...logged, usableForS: Math.round((supplied.usableUntilMs - now) / 1000) }, 'token taken from the store');
    this.waiters.settle((w) => w.resolve(auth));
    if (generation !== this.generation) {
      this.fetchNow();
      return;
    }
    const offset = supplied.schedule.refreshOffsetMs(lifetime, this.o.refreshRatio, this.o.random, first);
    const refreshAt = Math.min(supplied.issuedAtMs + offset, supplied.usableUntilMs);
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
    const validForMs = this.held.authorization() !== undefined ? this.held.usableUntilMs - now : 0;
    this.failures++;
    this.lastError = error;
    if (generation !== this.generation) this.fetchNow();
    else {
      const nextAttemptAt =
        failure instanceof SupplyFailure ? failure.nextAttemptAtMs : now + this.o.backoff.delayMs(this.failures, error, validForMs);
      this.retryLater(err, error, Math.max(0, nextAttemptAt - now), validForMs);
    }
    // Once the retry is scheduled: an observer that stops the loop on this state clears that timer too.
    this.publishState();
  }

  private retryLater(err: unknown, error: TokenFetchError, delay: number, validForMs: number): void {
    const nextAttemptAt = this.clock.now() + delay;
    this.nextAttemptAt = nextAttemptAt;
    this.retryTimer = this.clock.setTimeout(() => {
      this.retryTimer = undefined;
      this.fetchNow();
    }, delay);
    const retry = { attempt: this.failures, retryInMs: delay, tokenValidForMs: validForMs };
    const failure: FetchFailure = { label: this.o.label, route: this.o.route, endpoint: this.o.endpoint, err, retry };
    if (this.o.reportFailure !== undefined) this.o.reportFailure(failure);
    else logFetchFailure(this.o.log, failure);
    // Requests that would still be waiting when the next attempt starts get their answer now.
    this.waiters.settle(
      (w) => w.reject(this.unavailable(`no valid token; ${error.message}`, delay / 1000)),
      (w) => w.deadline < nextAttemptAt,
    );
  }

  /** What a waiting request is answered: `token_unavailable`, or once the credential was rejected, as `whenRejected` says. */
  private unavailable(message: string, retryAfterS: number): ProxyError {
    if (this.lastError?.outcome === 'rejected' && this.o.whenRejected !== undefined) return this.o.whenRejected();
    return new TokenUnavailableError(message, retryAfterS, this.lastError ? { cause: this.lastError } : undefined);
  }

  private get state(): TokenState {
    return {
      expiresAtMs: this.expiresAt,
      usableUntilMs: this.held.usableUntilMs,
      lastSuccessAtMs: this.lastSuccessAt,
      consecutiveFailures: this.failures,
      lastError: this.lastError,
    };
  }

  private publishState(): void {
    this.o.observer?.onState?.(this.state);
  }

  private clearTimers(): void {
    for (const timer of [this.refreshTimer, this.retryTimer]) if (timer !== undefined) this.clock.clearTimeout(timer);
    this.refreshTimer = this.retryTimer = undefined;
  }
}

/** One request waiting for a token. */
interface Waiter {
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
class WaitingRequests {
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
