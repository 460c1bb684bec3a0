/**
 * One credential's token shared by a fleet through a store (docs/token-store.md): the supply a
 * token source consults when a shared store is configured. It changes where a token comes from,
 * never the rules for using it (token-source.ts keeps those):
 *
 * - the store is read first, and a usable entry is taken instead of fetched (at a refresh, only
 *   one usable at least a second longer than the token held);
 * - otherwise the proxy takes the lease, fetches, writes the entry and releases the lease; a proxy
 *   that finds the lease taken reads the entry again (polling with jitter) for up to the fetch
 *   timeout, then tries for the lease again;
 * - a failed fetch under the lease is recorded with the next attempt's time, and no proxy fetches
 *   before it while the store answers, so a failing identity provider sees one retry per backoff
 *   step from the whole fleet;
 * - a token the gateway rejected is deleted from the store if it is still there, and never taken;
 * - whenever the store cannot be used (down, slow, refusing), the proxy fetches alone, as without
 *   a store: every store operation is bounded by the store timeout, and after one times out the
 *   store answers at once until it is found again.
 */
import type { Clock } from '../../core/clock.js';
import type { CredentialSlot, Lease, ReadResult, FailureRecord, TokenStore } from '../../store/index.js';
import type { Credential } from '../client-auth/index.js';
import type { DpopClient } from '../dpop/index.js';
import { TokenFetchError, type FetchOutcome } from '../errors.js';
import type { StoreNamespace } from './credential-namespace.js';
import type { HeldToken, SuppliedToken, TokenSupply } from '../token-supply.js';

/** A token from the store replaces the one held at a refresh only when usable at least this much longer. */
export const ADOPT_MARGIN_MS = 1_000;
/** The first read while another proxy holds the lease comes after about this; later ones twice as late each, up to the cap. */
export const POLL_FIRST_MS = 100;
export const POLL_CAP_MS = 1_000;
/** Tokens the gateway rejected, remembered so that none is taken from the store again. */
const REJECTED_KEPT = 8;

export interface StoreSupplyOptions {
  store: TokenStore;
  /** The credential's part of the store. */
  namespace: StoreNamespace;
  /** `TOKEN_FETCH_TIMEOUT_MS`: how long another proxy's fetch is waited for before the lease is tried again. */
  fetchTimeoutMs: number;
  /**
   * A pass-through credential's first use: its key is derived on first use, and a request waits
   * for the derivation no longer than this (the store timeout) before its token is fetched alone.
   */
  firstUseWithinMs?: number | undefined;
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

class StoreSupply implements TokenSupply {
  private readonly rejectedTokens: string[] = [];
  /** The lease held while this proxy's fetch under it is failing, until the failure is recorded. */
  private leased: { cs: CredentialSlot; lease: Lease } | undefined;
  /** A delete of a rejected token, awaited before the next read. */
  private deleting: Promise<unknown> = Promise.resolve();
  private firstUse: boolean;
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly own: TokenSupply,
    private readonly o: StoreSupplyOptions,
  ) {
    this.firstUse = o.firstUseWithinMs !== undefined;
  }

  async obtain(credential: Credential, held: HeldToken | undefined): Promise<SuppliedToken> {
    // The connection is opened while the key may still be derived.
    if (this.o.namespace.shared) this.o.store.need();
    const cs = await this.o.namespace.current(this.firstUse ? this.o.firstUseWithinMs : undefined);
    this.firstUse = false;
    if (cs === undefined) return this.own.obtain(credential, held);
    await this.deleting;
    for (;;) {
      const read = await cs.read();
      if (read.kind === 'unavailable') return this.alone(credential);
      const adopted = this.adoptable(read, held);
      if (adopted !== undefined) return adopted;
      this.throwIfFailing(read);
      const taken = await cs.takeLease();
      if (taken.kind === 'unavailable') return this.alone(credential);
      if (taken.kind === 'acquired') return this.fetchUnder(cs, taken.lease, credential, held);
      const awaited = await this.awaitEntry(cs, held);
      if (awaited === 'alone') return this.alone(credential);
      if (awaited !== 'lease') return awaited;
    }
  }

  failed(error: TokenFetchError, nextAttemptAtMs: number): void {
    const leased = this.leased;
    this.leased = undefined;
    if (leased === undefined) return;
    // Recorded before the lease goes: a proxy that takes it next finds the failure first.
    void leased.cs
      .recordFailure({ nextAttemptAtMs, outcome: error.outcome })
      .then(() => leased.lease.release())
      .catch(() => undefined);
  }

  rejected(token: string): void {
    this.rejectedTokens.push(token);
    if (this.rejectedTokens.length > REJECTED_KEPT) this.rejectedTokens.shift();
    const cs = this.o.namespace.ready;
    if (cs === undefined) return;
    this.o.store.need();
    // Only if the entry still holds it: a newer token another proxy wrote meanwhile stays.
    this.deleting = cs.deleteIfSame(token).catch(() => undefined);
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  /** This proxy's own fetch without the lease, as without a store: the store cannot be reached now. */
  private alone(credential: Credential): Promise<SuppliedToken> {
    return this.own.obtain(credential, undefined);
  }

  /** Fetches under the lease; the token is used at once, written, then the lease released. */
  private async fetchUnder(cs: CredentialSlot, lease: Lease, credential: Credential, held: HeldToken | undefined): Promise<SuppliedToken> {
    let supplied: SuppliedToken;
    try {
      supplied = await this.own.obtain(credential, held);
    } catch (err) {
      // Released once the token source has its retry time and it is recorded (failed()).
      this.leased = { cs, lease };
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
    void cs
      .write(token)
      .then(() => lease.release())
      .catch(() => undefined);
    return { ...supplied, shared: true };
  }

  /**
   * Another proxy holds the lease: reads the entry again after about 100 ms, twice as late each
   * time up to a second, each wait with jitter, until its token is there, its failure is
   * recorded, or the fetch timeout has passed (then the lease is tried again).
   */
  private async awaitEntry(cs: CredentialSlot, held: HeldToken | undefined): Promise<Awaited> {
    const { clock, random } = this.o;
    const until = clock.now() + this.o.fetchTimeoutMs;
    for (let step = POLL_FIRST_MS; ; step = Math.min(POLL_CAP_MS, step * 2)) {
      const left = until - clock.now();
      if (left <= 0) return 'lease';
      await this.sleep(Math.min(left, step * (0.5 + random())));
      if (this.stopped) throw new Error('the token source stopped');
      const read = await cs.read();
      if (read.kind === 'unavailable') return 'alone';
      const adopted = this.adoptable(read, held);
      if (adopted !== undefined) return adopted;
      this.throwIfFailing(read);
    }
  }

  /** The stored token as a supplied one, when it may be taken: usable, never rejected, and at a refresh usable longer than `held`. */
  private adoptable(read: ReadResult, held: HeldToken | undefined): SuppliedToken | undefined {
    if (read.kind !== 'hit') return undefined;
    const stored = read.token;
    if (this.rejectedTokens.includes(stored.accessToken)) return undefined;
    const dpopKey = stored.tokenType === 'DPoP' ? this.o.dpop?.prover.key() : undefined;
    if (stored.tokenType === 'DPoP' && dpopKey === undefined) return undefined;
    const usableUntil = this.o.clock.now() + read.remainingMs;
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
      shared: true,
    };
  }

  /** A failure another proxy recorded whose next attempt is still ahead: wait for it, as the fleet does. */
  private throwIfFailing(read: ReadResult): void {
    const failure = read.kind === 'unavailable' ? undefined : read.failure;
    const waitMs = failure === undefined ? 0 : failure.nextAttemptAtMs - this.o.clock.now();
    if (failure === undefined || waitMs <= 0) return;
    throw sharedFailure(failure, waitMs, this.o.random);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.o.clock.setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        this.o.clock.clearTimeout(timer);
        resolve();
      };
    });
  }
}

/**
 * The error a recorded failure is met with: its outcome as the recording proxy saw it, and the
 * wait until the fleet's next attempt as a least wait, spread by up to a tenth (at most a second)
 * so that the fleet's reads do not all come at once.
 */
function sharedFailure(failure: FailureRecord, waitMs: number, random: () => number): RecordedFailureError {
  const outcome = (OUTCOMES.includes(failure.outcome) ? failure.outcome : 'server_error') as Exclude<FetchOutcome, 'success'>;
  const spread = random() * Math.min(POLL_CAP_MS, waitMs / 10);
  return new RecordedFailureError(
    outcome,
    `the token endpoint failed for another proxy sharing the token store (${outcome}); no proxy tries again for ` +
      `${Math.ceil(waitMs / 1000)} s`,
    { retryAfterMs: Math.ceil(waitMs + spread) },
  );
}
