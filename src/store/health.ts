import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import type { BackendFailure, StoreBackend } from './backend.js';
import type { StoreResult, StoreUnavailable, TokenStoreObserver } from './contract.js';

/** The first background check comes 0.5-1 s after the store went down; the wait doubles up to 15-30 s. */
export const CHECK_BASE_MS = 1_000;
export const CHECK_CAP_MS = 30_000;

export interface HealthOptions {
  backend: StoreBackend;
  clock: Clock;
  random: () => number;
  /** `TOKEN_STORE_TIMEOUT_MS`: the client's own timeout on each command and on connecting; named in the log line of a timeout. */
  timeoutMs: number;
  log: Log;
  observer: TokenStoreObserver | undefined;
  /** The store as log lines name it: its URL without the password. */
  where: string;
}

/** One call's outcome: its value, or the unavailable answer and the result to count. */
export type Attempt<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly result: Extract<StoreResult, 'error' | 'timeout'>; readonly unavailable: StoreUnavailable };

type Outcome<T> = { kind: 'ok'; value: T } | { kind: 'failed'; err: unknown };

/**
 * Whether the store may be used. Each call is bounded by one timeout, the client's own (the
 * backend sets its command and connect timeouts to the store timeout; no second timer here). A
 * timeout or a failed connection makes the store down: calls are refused at once, without the network, until
 * a background check (with jitter, so a fleet does not come back at once) connects and pings.
 * A command the server refuses fails alone. Each change of problem is logged once (warn, or
 * error for a configuration to fix), and the return to health once; `onHealth` follows the last
 * call's success.
 */
export class StoreHealth {
  private readonly o: HealthOptions;
  private down: BackendFailure | undefined;
  /** The problem last logged, until a success is logged. */
  private logged: string | undefined;
  private lastOk: boolean | undefined;
  private checkTimer: unknown;
  private checks = 0;
  private closed = false;

  constructor(options: HealthOptions) {
    this.o = options;
  }

  /** False while the store counts as down. */
  get up(): boolean {
    return this.down === undefined;
  }

  /** Runs `call`; refused at once while the store is down. */
  async run<T>(call: () => Promise<T>): Promise<Attempt<T>> {
    if (this.down !== undefined) {
      return { ok: false, result: 'error', unavailable: { kind: 'unavailable', reason: 'down', detail: this.down.detail } };
    }
    const outcome = await settled(call);
    if (outcome.kind === 'ok') {
      this.succeeded();
      return { ok: true, value: outcome.value };
    }
    const failure = this.failed(outcome.err);
    const timedOut = failure.problem === 'timeout';
    return {
      ok: false,
      result: timedOut ? 'timeout' : 'error',
      unavailable: { kind: 'unavailable', reason: timedOut ? 'timeout' : 'error', detail: failure.detail },
    };
  }

  /** Connects and pings now, whatever the state (for `check`); a success ends an outage. */
  async probe(): Promise<{ kind: 'ok' } | StoreUnavailable> {
    const outcome = await settled(() => this.o.backend.ping());
    if (outcome.kind === 'ok') {
      this.recovered();
      return { kind: 'ok' };
    }
    const failure = this.failed(outcome.err);
    return { kind: 'unavailable', reason: failure.problem === 'timeout' ? 'timeout' : 'error', detail: failure.detail };
  }

  close(): void {
    this.closed = true;
    this.o.clock.clearTimeout(this.checkTimer);
  }

  private failed(err: unknown): BackendFailure {
    const explained = this.o.backend.explain(err);
    const failure: BackendFailure =
      explained.problem === 'timeout'
        ? { ...explained, detail: `the token store did not answer within TOKEN_STORE_TIMEOUT_MS (${this.o.timeoutMs} ms)` }
        : explained;
    // A connection that timed out may still answer later: it is not used again.
    if (failure.connection) this.o.backend.reset();
    this.health(false);
    if (this.logged !== failure.problem) {
      this.logged = failure.problem;
      const fields = { store: this.o.where, problem: failure.problem, detail: failure.detail };
      const message = failure.connection
        ? 'token store unavailable: tokens are fetched as without it until a check finds it again'
        : 'token store refused an operation: it is done as without the store';
      if (failure.severe) this.o.log.error(fields, message);
      else this.o.log.warn(fields, message);
    }
    if (failure.connection) {
      if (this.down === undefined) this.checks = 0;
      this.down = failure;
      this.scheduleCheck();
    }
    return failure;
  }

  private succeeded(): void {
    this.health(true);
    if (this.logged !== undefined) {
      this.logged = undefined;
      this.o.log.info({ store: this.o.where }, 'token store usable again');
    }
  }

  private recovered(): void {
    this.down = undefined;
    this.checks = 0;
    this.o.clock.clearTimeout(this.checkTimer);
    this.succeeded();
  }

  private health(ok: boolean): void {
    if (this.lastOk === ok) return;
    this.lastOk = ok;
    this.o.observer?.onHealth?.(ok);
  }

  /** Equal jitter: half the step fixed, half random, so checks neither bunch up nor come at once. */
  private scheduleCheck(): void {
    if (this.closed) return;
    this.o.clock.clearTimeout(this.checkTimer);
    const step = Math.min(CHECK_CAP_MS, CHECK_BASE_MS * 2 ** this.checks);
    this.checks++;
    this.checkTimer = this.o.clock.setTimeout(() => void this.check(), step / 2 + this.o.random() * (step / 2));
  }

  private async check(): Promise<void> {
    if (this.closed || this.down === undefined) return;
    const outcome = await settled(() => this.o.backend.ping());
    if (this.closed) return;
    if (outcome.kind === 'ok') this.recovered();
    // A refused PING (a connection that answers but will not serve) keeps the checks going too.
    else if (!this.failed(outcome.err).connection) this.scheduleCheck();
  }
}

/** A call's value or what it threw, as a value. */
function settled<T>(call: () => Promise<T>): Promise<Outcome<T>> {
  return new Promise<T>((resolve) => resolve(call())).then(
    (value): Outcome<T> => ({ kind: 'ok', value }),
    (err: unknown): Outcome<T> => ({ kind: 'failed', err }),
  );
}
