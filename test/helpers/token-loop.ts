import type { Clock } from '../../src/core/clock.js';
import type { ProxyError } from '../../src/core/errors.js';
import type { Log } from '../../src/core/log.js';
import type { Authorization } from '../../src/token/held-token.js';
import type { Credential } from '../../src/token/client-auth/index.js';
import type { EndpointName } from '../../src/token/diagnose.js';
import type { DpopClient } from '../../src/token/dpop/index.js';
import type { FetchToken } from '../../src/token/fetch-token.js';
import type { HeldToken } from '../../src/token/held-token.js';
import { RefreshLoop } from '../../src/token/refresh-loop.js';
import { backoffPolicy, DEFAULT_SCHEDULE, type BackoffPolicy, type RefreshSchedule } from '../../src/token/refresh-schedule.js';
import { fetchingSupply, type TokenSupply } from '../../src/token/token-supply.js';
import type { TokenSourceObserver, TokenState } from '../../src/token/token-state.js';

/** A token source as the wiring (src/app/routes.ts) builds one, for unit tests: a fetcher, and a store around it when given. */
export interface TestSourceOptions {
  label?: string;
  credential: Credential;
  fetchToken: FetchToken;
  clock: Clock;
  random: () => number;
  refreshRatio: number;
  waitTimeoutMs: number;
  log: Log;
  observer?: TokenSourceObserver | undefined;
  schedule?: RefreshSchedule | undefined;
  endpoint?: EndpointName | undefined;
  dpop?: DpopClient | undefined;
  whenRejected?: (() => ProxyError) | undefined;
  /** The supply around this proxy's own fetch (a shared store's), with the loop's backoff. */
  withStore?: ((own: TokenSupply, backoff: BackoffPolicy) => TokenSupply) | undefined;
}

/**
 * The refresh loop and its held token, with the reads a test makes of them: the token held now,
 * the state last reported to the observer.
 */
export interface TestSource {
  readonly loop: RefreshLoop;
  readonly held: HeldToken;
  /** The state last reported (before the first report: nothing held, no failure). */
  readonly state: TokenState;
  /** The last failure, as last reported. */
  readonly lastError: TokenState['lastError'];
  start(): void;
  stop(why?: string): void;
  setCredential(credential: Credential): void;
  refreshNow(reason: string): void;
  authorization(): Authorization | undefined;
  authorize(): Promise<Authorization>;
  invalidate(token: string): boolean;
  /** The token usable now, if any. */
  current(): string | undefined;
  /** A usable token, waited for as a request waits. */
  get(): Promise<string>;
}

const NOTHING: TokenState = { expiresAtMs: 0, usableUntilMs: 0, lastSuccessAtMs: 0, consecutiveFailures: 0, lastError: undefined };

/** Builds a source as the wiring does: backoff and fetching supply from the schedule, the store's supply around it. */
export function testSource(o: TestSourceOptions): TestSource {
  const schedule = o.schedule ?? DEFAULT_SCHEDULE;
  const backoff = backoffPolicy(schedule, o.random);
  const own = fetchingSupply(o.fetchToken, { clock: o.clock, count: o.observer?.onFetch?.bind(o.observer), backoff, schedule });
  let state = NOTHING;
  const loop = new RefreshLoop({
    label: o.label ?? 'configured',
    credential: o.credential,
    supply: o.withStore?.(own, backoff) ?? own,
    backoff,
    clock: o.clock,
    random: o.random,
    refreshRatio: o.refreshRatio,
    waitTimeoutMs: o.waitTimeoutMs,
    log: o.log,
    endpoint: o.endpoint,
    dpop: o.dpop,
    whenRejected: o.whenRejected,
    observer: {
      onAdopt: () => o.observer?.onAdopt?.(),
      onState(s) {
        state = s;
        o.observer?.onState?.(s);
      },
    },
  });
  const held = loop.held;
  return {
    loop,
    held,
    get state() {
      return state;
    },
    get lastError() {
      return state.lastError;
    },
    start: () => loop.start(),
    stop: (why) => loop.stop(why),
    setCredential: (credential) => loop.setCredential(credential),
    refreshNow: (reason) => loop.refreshNow(reason),
    authorization: () => held.authorization(),
    authorize: () => held.authorize(),
    invalidate: (token) => held.invalidate(token),
    current: () => held.authorization()?.token,
    get: () => held.authorize().then((auth) => auth.token),
  };
}
