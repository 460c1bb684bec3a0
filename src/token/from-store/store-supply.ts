/**
 * Where a token comes from when a shared token store is configured (docs/token-store.md): the
 * supply a token source consults, around this proxy's own fetch. It changes where a token comes
 * from, never the rules for using it (token-source.ts keeps those). In the order of
 * {@link StoreSupply.obtain}:
 *
 * 1. read first: the store's entry is read, and a usable token there is adopted instead of fetched
 *    (at a refresh, only one usable at least a second longer than the token held; never one the
 *    gateway rejected);
 * 2. a failure another proxy recorded, whose next attempt is still ahead, is waited for as the
 *    fleet does, but never longer than this proxy's own backoff could wait, and once: looked at
 *    again when that wait ends, the same record is passed by; a record the store keeps longer
 *    than that wait (replayed, or stretched) is cut to it;
 * 3. lease: otherwise the proxy takes the lease, fetches, writes the entry and releases the lease;
 *    when its fetch fails, it records the failure with its next attempt's time (this proxy's
 *    backoff) and then releases the lease, before the attempt ends;
 * 4. wait: a proxy that finds the lease taken reads the entry again (polling with jitter) for up
 *    to the fetch timeout, then tries for the lease again; one lease length in all from the moment
 *    it first found the lease taken, however many leases it finds meanwhile, then it fetches
 *    itself (what it reads cannot hold it longer);
 * 5. delete by fingerprint: the newest token the gateway rejected is deleted from the store first,
 *    if it is still there;
 * 6. whenever the store cannot be used (down, slow, refusing), the proxy fetches alone, as without
 *    a store; the store's operations before the fetch (1, 3 and 5) take one store timeout in all,
 *    however many there are (attempt-budget.ts). A pass-through key's derivation is not the
 *    store's: it is waited for as long as a caller waits for a token, then the budget starts.
 *
 * The store's operations are `store/contract.ts`; the credential's slot in the store is
 * `slot-seed.ts`; how the wiring gives each shared credential this supply is
 * `shared-credentials.ts`.
 */
import type { Clock } from '../../core/clock.js';
import {
  LEASE_MARGIN_MS,
  type Slot,
  type FailureRecord,
  type Lease,
  type LeaseResult,
  type ReadResult,
  type TokenStore,
} from '../../store/index.js';
import type { DpopClient } from '../dpop/index.js';
import { TokenFetchError, type FetchOutcome } from '../errors.js';
import { STORE_SCHEDULE, type BackoffPolicy } from '../refresh-schedule.js';
import { SupplyFailure, type HeldToken, type SuppliedToken, type SupplyRequest, type TokenSupply } from '../token-supply.js';
import type { CurrentSlot } from './slot-seed.js';
import { LATE, attemptBudget, type AttemptBudget } from './attempt-budget.js';

/** A token from the store replaces the one held at a refresh only when usable at least this much longer. */
export const ADOPT_MARGIN_MS = 1_000;
/** The first read while another proxy holds the lease comes after about this; later ones twice as late each, up to the cap. */
export const POLL_FIRST_MS = 100;
export const POLL_CAP_MS = 1_000;

export interface StoreSupplyOptions {
  store: TokenStore;
  /** The credential's slot in the store, as it is now. */
  slot: CurrentSlot;
  /** `TOKEN_FETCH_TIMEOUT_MS`: how long another proxy's fetch is waited for before the lease is tried again. */
  fetchTimeoutMs: number;
  /** `TOKEN_STORE_TIMEOUT_MS`: what the store's operations before a fetch may take in all. */
  storeTimeoutMs: number;
  /** The token source's backoff: the next attempt's time a failed fetch under the lease records. */
  backoff: BackoffPolicy;
  /**
   * A pass-through credential's key is derived on its first use, or at a later attempt when the
   * derivations of the minute were spent: an attempt waits for a derivation under way no longer
   * than this (`TOKEN_WAIT_TIMEOUT_MS`, the caller's own wait: on a tenth of a core one derivation
   * takes seconds), then fetches its token alone. Not counted in the store's budget.
   */
  deriveWithinMs?: number | undefined;
  clock: Clock;
  random: () => number;
  /** With DPoP from DPOP_KEY_FILE: a DPoP-bound token from the store is proven with its key. */
  dpop?: DpopClient | undefined;
}

/** A failed fetch another proxy recorded: no attempt before its time. Not a fetch of this proxy's, so not counted as one. */
export class RecordedFailureError extends TokenFetchError {}

const OUTCOMES: readonly string[] = ['rejected', 'rate_limited', 'server_error', 'network_error', 'timeout', 'invalid_response'];

/** What the wait for another proxy's fetch ended in. */
type Awaited = SuppliedToken | 'lease' | 'alone';

/** The supply of a credential shared through `options.store`, around `own` (this proxy's fetch). */
export function storeSupply(own: TokenSupply, options: StoreSupplyOptions): TokenSupply {
  return new StoreSupply(own, options);
}

/** Tokens the gateway rejected, remembered so that none is taken from the store again. */
const REJECTED_KEPT = 8;

class StoreSupply implements TokenSupply {
  /** Tokens the gateway rejected, newest last: none is ever taken again, and the newest is deleted from the store once. */
  private readonly rejectedTokens: string[] = [];
  /** The newest rejected token deleted from the store, so each is deleted once. */
  private deleted: string | undefined;
  /** The sealed time of the last failure record waited for: the same record is not waited for twice. */
  private honoured: number | undefined;

  constructor(
    private readonly own: TokenSupply,
    private readonly o: StoreSupplyOptions,
  ) {}

  rejected(token: string): void {
    this.rejectedTokens.push(token);
    if (this.rejectedTokens.length > REJECTED_KEPT) this.rejectedTokens.shift();
  }

  async obtain(request: SupplyRequest): Promise<SuppliedToken> {
    const { deriveWithinMs, clock, storeTimeoutMs } = this.o;
    let slot = this.o.slot.ready;
    if (slot === undefined) {
      if (!this.o.slot.shared) return this.own.obtain(request);
      // The connection is opened while the key may still be derived. A pass-through credential's
      // key, derived on its first use, is waited for at most `deriveWithinMs`; the configured
      // credential's is derived at start and on a change, whatever the store does. Neither is
      // the store's time: the budget starts once the slot is there.
      this.o.store.need();
      slot = await this.o.slot.current(deriveWithinMs);
      if (slot === undefined) return this.own.obtain(request);
    }
    const budget: AttemptBudget = attemptBudget(clock, storeTimeoutMs);
    const newest = this.rejectedTokens.at(-1);
    if (newest !== undefined && newest !== this.deleted) {
      // The newest token the gateway rejected, deleted only if the entry still holds it: a newer token another proxy wrote stays.
      this.deleted = newest;
      if ((await budget.within(() => slot.deleteIfSame(newest))) === LATE) return this.alone(request);
    }
    /** When the lease was first found taken: other proxies' fetches are waited for one lease length in all from then. */
    let waitingSince: number | undefined;
    for (;;) {
      // Until the lease is found taken, the store's operations share the budget; after that the
      // attempt is waiting for another proxy's fetch, each operation bounded on its own.
      const read = waitingSince === undefined ? await budget.within(slot.read) : await slot.read();
      if (read === LATE || read.kind === 'unavailable') return this.alone(request);
      this.boundFailure(slot, read, request);
      const adopted = this.adoptable(read, request);
      if (adopted !== undefined) return adopted;
      this.throwIfFailing(read, request);
      let taking: Promise<LeaseResult> | undefined;
      const taken = waitingSince === undefined ? await budget.within(() => (taking = slot.takeLease())) : await slot.takeLease();
      if (taken === LATE) return this.aloneWithLateLease(slot, taking, request);
      if (taken.kind === 'unavailable') return this.alone(request);
      if (taken.kind === 'acquired') return this.fetchUnder(slot, taken.lease, request);
      const now = this.o.clock.now();
      waitingSince ??= now;
      const waitUntil = waitingSince + this.o.fetchTimeoutMs + LEASE_MARGIN_MS;
      if (now >= waitUntil) {
        // Leases kept being taken for a whole lease length: no fetch of another proxy's is that
        // long, so this one fetches itself and writes what it gets, as the lease holder would.
        this.o.store.anomaly('lease_wait_exhausted');
        return this.fetchUnder(slot, undefined, request);
      }
      const awaited = await this.awaitEntry(slot, request, Math.min(now + this.o.fetchTimeoutMs, waitUntil));
      if (awaited === 'alone') return this.alone(request);
      if (awaited !== 'lease') return awaited;
    }
  }

  /**
   * This proxy's own fetch, alone, once the budget ran out on the lease. Should the lease come
   * after all, what the fetch gets is written under it (or its failure recorded) and the lease
   * released, as under a lease taken in time: a proxy that found it taken meanwhile waits for that
   * token, not for a lease nobody fetches under.
   */
  private aloneWithLateLease(slot: Slot, taking: Promise<LeaseResult> | undefined, request: SupplyRequest): Promise<SuppliedToken> {
    const fetching = this.alone(request);
    void taking
      ?.then((taken) => (taken.kind === 'acquired' ? this.publishUnder(slot, taken.lease, fetching) : undefined))
      .catch(() => undefined);
    return fetching;
  }

  /** This proxy's own fetch without the lease, as without a store: the store cannot be reached now. */
  private alone(request: SupplyRequest): Promise<SuppliedToken> {
    return this.own.obtain({ ...request, held: undefined });
  }

  /**
   * Fetches under the lease (or, once waiting for leases is exhausted, without one); the token is
   * used at once, written, then the lease released. A failed fetch under the lease is recorded with
   * its next attempt's time, then the lease released, before the attempt ends: a proxy that takes
   * the lease next finds the failure first.
   */
  private fetchUnder(slot: Slot, lease: Lease | undefined, request: SupplyRequest): Promise<SuppliedToken> {
    return this.publishUnder(slot, lease, this.own.obtain(request));
  }

  /** What `fetching` gets, written under `lease` and the lease released; or its failure recorded, then the lease released. */
  private async publishUnder(slot: Slot, lease: Lease | undefined, fetching: Promise<SuppliedToken>): Promise<SuppliedToken> {
    let supplied: SuppliedToken;
    try {
      supplied = await fetching;
    } catch (err) {
      if (lease === undefined) throw err;
      if (err instanceof SupplyFailure) {
        const outcome = err.cause instanceof TokenFetchError ? err.cause.outcome : 'network_error';
        await slot.recordFailure({ nextAttemptAtMs: err.nextAttemptAtMs, outcome });
      }
      await lease.release();
      throw err;
    }
    const { grant } = supplied;
    const token = {
      accessToken: grant.accessToken,
      tokenType: grant.tokenType ?? 'Bearer',
      issuedAtMs: supplied.issuedAtMs,
      expiresAtMs: supplied.expiresAtMs,
      usableUntilMs: supplied.usableUntilMs,
    };
    // The token is used at once; the write and the release follow on their own, each bounded by the store timeout.
    void slot
      .write(token)
      .then(() => lease?.release())
      .catch(() => undefined);
    return { ...supplied, schedule: STORE_SCHEDULE };
  }

  /**
   * Another proxy holds the lease: reads the entry again after about 100 ms, twice as late each
   * time up to a second, each wait with jitter, until its token is there, its failure is
   * recorded, or `until` has passed (then the lease is tried again).
   */
  private async awaitEntry(slot: Slot, request: SupplyRequest, until: number): Promise<Awaited> {
    const { clock, random } = this.o;
    for (let step = POLL_FIRST_MS; ; step = Math.min(POLL_CAP_MS, step * 2)) {
      const left = until - clock.now();
      if (left <= 0) return 'lease';
      await this.sleep(Math.min(left, step * (0.5 + random())), request.signal);
      const read = await slot.read();
      if (read.kind === 'unavailable') return 'alone';
      this.boundFailure(slot, read, request);
      const adopted = this.adoptable(read, request);
      if (adopted !== undefined) return adopted;
      this.throwIfFailing(read, request);
    }
  }

  /** The stored token as a supplied one, when it may be taken: usable, never rejected, and at a refresh usable longer than the held one. */
  private adoptable(read: ReadResult, request: SupplyRequest): SuppliedToken | undefined {
    if (read.kind !== 'hit') return undefined;
    const stored = read.token;
    if (this.rejectedTokens.includes(stored.accessToken)) return undefined;
    const dpopKey = stored.tokenType === 'DPoP' ? this.o.dpop?.prover.key() : undefined;
    if (stored.tokenType === 'DPoP' && dpopKey === undefined) return undefined;
    const usableUntil = this.o.clock.now() + read.remainingMs;
    const held: HeldToken | undefined = request.held;
    if (held !== undefined && usableUntil < held.usableUntilMs + ADOPT_MARGIN_MS) return undefined;
    // By durations only, from this proxy's clock: the writer's may disagree. Where the store's own
    // time to live cut the remaining life short, the token reads as older, and is refreshed sooner.
    const lifetime = stored.expiresAtMs - stored.issuedAtMs;
    const issuedAt = usableUntil - (stored.usableUntilMs - stored.issuedAtMs);
    return {
      grant: { accessToken: stored.accessToken, lifetimeMs: lifetime, tokenType: stored.tokenType, ...(dpopKey && { dpopKey }) },
      issuedAtMs: issuedAt,
      lifetimeMs: lifetime,
      expiresAtMs: issuedAt + lifetime,
      usableUntilMs: usableUntil,
      fetchMs: undefined,
      schedule: STORE_SCHEDULE,
    };
  }

  /**
   * The longest wait this proxy's own backoff could ask for now after `failure`, holding a token
   * usable for `validForMs` more: 30 s without one, a `Retry-After` of at most 5 minutes after a
   * throttling or failing endpoint, or a quarter of the token's remaining use.
   */
  private longestWaitMs(failure: FailureRecord, validForMs: number): number {
    return this.o.backoff.longestMs(validForMs, failure.outcome === 'rate_limited' || failure.outcome === 'server_error');
  }

  /** How much longer the token this attempt holds stays usable (0 without one). */
  private heldForMs(request: SupplyRequest): number {
    const held = request.held;
    const now = this.o.clock.now();
    return held !== undefined && held.usableUntilMs > now ? held.usableUntilMs - now : 0;
  }

  /**
   * A failure record the store keeps longer than the longest wait this proxy's own backoff could
   * ask for (replayed, its time to live stretched, whatever its sealed time says) is cut to that
   * wait, in the background (a script: only ever shortened), and counted: someone else writes the
   * prefix. A token the read found counts as held (it is, or its holders' backoff grows with it):
   * a record a proxy holding it may have written is never cut.
   */
  private boundFailure(slot: Slot, read: ReadResult, request: SupplyRequest): void {
    const failure = read.kind === 'unavailable' ? undefined : read.failure;
    if (failure === undefined) return;
    const longestMs = this.longestWaitMs(failure, Math.max(this.heldForMs(request), read.kind === 'hit' ? read.remainingMs : 0));
    if (failure.keptUntilMs - this.o.clock.now() > longestMs) void slot.cutFailure(longestMs).catch(() => undefined);
  }

  /**
   * A failure another proxy recorded whose next attempt is still ahead: wait for it, as the fleet
   * does, for the least of its time (sealed, and its time to live: the store bounds both) and the
   * longest wait this proxy's own backoff could give now; a record already waited for once is
   * passed by, so whatever it says, it holds this proxy no longer than its own backoff would.
   */
  private throwIfFailing(read: ReadResult, request: SupplyRequest): void {
    const failure = read.kind === 'unavailable' ? undefined : read.failure;
    const now = this.o.clock.now();
    if (failure === undefined || failure.nextAttemptAtMs <= now || failure.sealedAtMs === this.honoured) return;
    const longestMs = this.longestWaitMs(failure, this.heldForMs(request));
    const waitMs = Math.min(failure.nextAttemptAtMs - now, longestMs);
    this.honoured = failure.sealedAtMs;
    // Spread by up to a tenth (at most a second), so that the fleet's reads do not all come at once.
    const spread = this.o.random() * Math.min(POLL_CAP_MS, waitMs / 10);
    throw new SupplyFailure(recordedFailure(failure, waitMs), now + Math.ceil(Math.min(longestMs, waitMs + spread)));
  }

  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(new Error('the token source stopped'));
      const stop = (): void => {
        this.o.clock.clearTimeout(timer);
        reject(new Error('the token source stopped'));
      };
      const timer = this.o.clock.setTimeout(() => {
        signal.removeEventListener('abort', stop);
        resolve();
      }, ms);
      signal.addEventListener('abort', stop, { once: true });
    });
  }
}

/** The error a recorded failure is met with: its outcome as the recording proxy saw it. */
function recordedFailure(failure: FailureRecord, waitMs: number): RecordedFailureError {
  const outcome = (OUTCOMES.includes(failure.outcome) ? failure.outcome : 'server_error') as Exclude<FetchOutcome, 'success'>;
  return new RecordedFailureError(
    outcome,
    `the token endpoint failed for another proxy sharing the token store (${outcome}); no proxy tries again for ` +
      `${Math.ceil(waitMs / 1000)} s`,
  );
}
