import { hash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import { InvalidClientError, TokenUnavailableError, type ProxyError } from '../core/errors.js';
import type { Log } from '../core/log.js';
import { DIGEST_WINDOW_MS, LogDigest } from '../core/log-digest.js';
import type { Credential } from './client-auth/index.js';
import { asFetchError, logFetchFailure, type FetchFailure } from './diagnose.js';
import type { DpopClient } from './dpop/index.js';
import type { HeldToken } from './held-token.js';
import { NewCredentialAdmission } from './new-credential-admission.js';
import { RefreshLoop } from './refresh-loop.js';
import type { BackoffPolicy } from './refresh-schedule.js';
import type { TokenSupply } from './token-supply.js';
import type { TokenSourceObserver, TokenState } from './token-state.js';

/** How long a credential the token endpoint rejected is answered without asking it again. */
export const REJECTION_MEMORY_MS = 10_000;

/** The answer to a new credential past those bounds: the caller may retry in a second. */
const busy = (): TokenUnavailableError =>
  new TokenUnavailableError(
    'more new pass-through credentials are arriving than the token endpoint is asked for at once; retry shortly',
    1,
  );

/** The answer to a malformed or rejected pass-through credential; never names the id or secret. */
const rejectedClient = (): InvalidClientError =>
  new InvalidClientError('the token endpoint rejected the Basic credentials of this request');

export interface SourceCacheOptions {
  /** Most entries held (`TOKEN_CACHE_MAX`); the least recently used one is evicted beyond it. */
  max: number;
  /** A credential's supply: this proxy's fetch, or the store's around it, with its loop's backoff. */
  supplyFor(credential: Credential, backoff: BackoffPolicy): TokenSupply;
  /** How long a failed attempt waits before the next. */
  backoff: BackoffPolicy;
  clock: Clock;
  random: () => number;
  refreshRatio: number;
  waitTimeoutMs: number;
  /** Idle limit of an entry that has no token yet, in ms (a token's lifetime once it has one). */
  defaultLifetimeMs: number;
  log: Log;
  /** The route whose callers' credentials these are, named in log lines. */
  route?: string | undefined;
  /** Counts fetches (never by client id). */
  observer: TokenSourceObserver;
  /** Called with the number of entries whenever it changes. */
  onSize(n: number): void;
  /** With DPoP: the tokens' proofs (one key per process). */
  dpop?: DpopClient | undefined;
  /** Key for the HMAC of id and secret; random per process unless given. */
  hmacKey?: Buffer;
}

interface Entry {
  loop: RefreshLoop;
  /** When a request last asked for it: its idle time counts from here. */
  lastUsedAt: number;
  /** How long it may go without a request: a token's lifetime once it has one. */
  idleLimitMs: number;
}

/** The pass-through credentials' token sources: one per caller's own Basic credentials. */
export interface SourceCache {
  /**
   * The held token for these credentials; `invalid_client` while they are remembered as rejected;
   * `token_unavailable` for new ones past the bounds on new credentials.
   */
  authorizerFor(credential: Credential): HeldToken | ProxyError;
  readonly size: number;
  /** Stops every entry's timers and drops them all. */
  stop(): void;
}

/** What an attempt of a source whose entry was dropped meanwhile ends in (the source is stopped: nobody reads it). */
const DROPPED = 'the pass-through credential was idle for a token lifetime and is dropped';

/** What a request waiting on an evicted entry's first token is told (it may simply retry). */
const EVICTED = 'more pass-through credentials are in use than TOKEN_CACHE_MAX; this one was evicted before its token came';

/**
 * An LRU of refresh loops for callers' own credentials, keyed by an HMAC of id and secret under a
 * per-process key, so a wrong secret finds no entry and never another caller's token. Each entry
 * runs the whole lifecycle of a {@link RefreshLoop}; it is dropped (timers stopped) after a token
 * lifetime without a request, when evicted, or when the token endpoint rejects its credentials,
 * which are then answered `invalid_client` for {@link REJECTION_MEMORY_MS} without a fetch.
 *
 * A caller who sends credentials by the thousand costs a bounded amount and takes nothing from
 * anyone else (docs/forwarding.md, "Pass-through credentials under a flood"): a credential new to
 * the cache waits apart while its first fetch is in flight, and is tried at all only as
 * {@link NewCredentialAdmission} lets it (so many at once, so many a second); past that, a request
 * with a new credential is answered `token_unavailable` with a `Retry-After`, while those holding a
 * token are served. A new credential joins the LRU with its first token, so one that never had a token
 * never evicts one that has; one whose first fetch fails is dropped, not retried in the background
 * (a caller's next request tries it again, as a new credential). Failed fetches and refused new
 * credentials are logged at most once per 10 s with a count, not a line each.
 */
export function createSourceCache(options: SourceCacheOptions): SourceCache {
  const { clock, log, route } = options;
  const rejectedAt = new LRUCache<string, number>({ max: options.max });
  // Idle expiry is the cache's own (`ttl`, renewed by each request's `get`), on this clock. Without
  // `ttlAutopurge`, whose timers would run on the process's clock, an idle entry is found stale
  // when it would next cost something: its source's next attempt (below), or the next write.
  const entries = new LRUCache<string, Entry>({
    max: options.max,
    ttl: options.defaultLifetimeMs,
    updateAgeOnGet: true,
    perf: { now: () => clock.now() },
    // Read the clock on every check: the default caches it for a millisecond with a timer of its own per read.
    ttlResolution: 0,
    dispose: (entry, _key, reason) => {
      if (reason === 'expire')
        log.debug({ route, credential: 'passthrough' }, 'pass-through credential idle for a token lifetime; dropped');
      entry.loop.stop(reason === 'evict' ? EVICTED : undefined);
    },
    disposeAfter: () => options.onSize(entries.size),
  });
  /** New credentials, until their first fetch ends: as many as {@link NewCredentialAdmission} lets in. */
  const arriving = new Map<string, Entry>();
  const admission = new NewCredentialAdmission(clock);
  const keyOf = credentialKeyer(options.hmacKey ?? randomBytes(32));
  /** Whether the entry is still held: a stale one (idle past its limit) is dropped here, its loop stopped. */
  const held = (key: string, entry: Entry): boolean => arriving.get(key) === entry || entries.get(key, { updateAgeOnGet: false }) === entry;

  const failures = new LogDigest(clock, (total, byOutcome) =>
    log.warn(
      { route, credential: 'passthrough', failed: total, byOutcome, windowS: DIGEST_WINDOW_MS / 1000 },
      'more pass-through credentials failed to get a token',
    ),
  );
  const reportFailure = (failure: FetchFailure): void =>
    failures.note(asFetchError(failure.err).outcome, () => logFetchFailure(log, failure));
  const refused = new LogDigest(clock, (total) =>
    log.warn(
      { route, credential: 'passthrough', refused: total, windowS: DIGEST_WINDOW_MS / 1000 },
      'more requests with new pass-through credentials were answered 503',
    ),
  );

  /** What an entry's loop reports: fetches and adoptions counted; its first token, its token's lifetime and a rejection acted on. */
  const observerOf = (key: string, entry: () => Entry): TokenSourceObserver => ({
    onAdopt: () => options.observer.onAdopt?.(),
    onState(state: TokenState) {
      const e = entry();
      if (arriving.get(key) === e) {
        if (state.expiresAtMs === 0 && state.lastError === undefined) return;
        arriving.delete(key);
        if (state.expiresAtMs === 0) {
          // Its first fetch failed: dropped, its waiting requests told why; a rejection is remembered.
          if (state.lastError?.outcome === 'rejected') rejectedAt.set(key, clock.now());
          e.loop.stop(`no valid token for these credentials; ${state.lastError!.message}`);
          return;
        }
        // Its first token: it joins the LRU, which may evict the least recently used holder.
        entries.set(key, e);
        options.onSize(entries.size);
      }
      if (entries.peek(key) !== e) return;
      // Reported once its retry is scheduled, so that stopping the loop clears that timer too.
      if (state.lastError?.outcome === 'rejected') {
        rejectedAt.set(key, clock.now());
        entries.delete(key);
        return;
      }
      if (state.expiresAtMs === 0) return;
      const lifetime = state.expiresAtMs - state.lastSuccessAtMs;
      if (lifetime > 0 && lifetime !== e.idleLimitMs) {
        e.idleLimitMs = lifetime;
        // The same entry with its new limit, still counted from its last request.
        entries.set(key, e, { ttl: lifetime, start: e.lastUsedAt });
      }
    },
  });

  const create = (key: string, credential: Credential): Entry => {
    const supply = options.supplyFor(credential, options.backoff);
    const entry: Entry = {
      loop: new RefreshLoop({
        label: 'passthrough',
        route,
        credential,
        // Every attempt, a refresh included, first asks whether the entry is still held: an entry
        // idle for a token lifetime costs no fetch, and its loop stops.
        supply: {
          obtain: (request) => (held(key, entry) ? supply.obtain(request) : Promise.reject(new Error(DROPPED))),
          rejected: (token) => supply.rejected(token),
        },
        backoff: options.backoff,
        clock,
        random: options.random,
        refreshRatio: options.refreshRatio,
        waitTimeoutMs: options.waitTimeoutMs,
        log,
        dpop: options.dpop,
        observer: observerOf(key, () => entry),
        whenRejected: rejectedClient,
        reportFailure,
      }),
      lastUsedAt: clock.now(),
      idleLimitMs: options.defaultLifetimeMs,
    };
    arriving.set(key, entry);
    // Its first fetch now: it leaves the new credentials when that ends, whoever asks meanwhile.
    entry.loop.start();
    return entry;
  };

  return {
    authorizerFor(credential) {
      const key = keyOf(credential);
      const at = rejectedAt.get(key);
      if (at !== undefined) {
        if (clock.now() - at < REJECTION_MEMORY_MS) return rejectedClient();
        rejectedAt.delete(key);
      }
      let entry = entries.get(key) ?? arriving.get(key);
      if (entry === undefined) {
        if (!admission.admit(key, arriving.size)) {
          refused.note('busy', () =>
            log.warn(
              { route, credential: 'passthrough', inFlight: arriving.size },
              'new pass-through credentials are arriving faster than they are tried; answering 503 with Retry-After',
            ),
          );
          return busy();
        }
        entry = create(key, credential);
      }
      entry.lastUsedAt = clock.now();
      return entry.loop.held;
    },
    get size() {
      return entries.size;
    },
    stop() {
      for (const e of arriving.values()) e.loop.stop();
      arriving.clear();
      entries.clear();
      rejectedAt.clear();
      failures.stop();
      refused.stop();
    },
  };
}

/**
 * HMAC-SHA256 (RFC 2104) of id and secret under `key`, as the cache key. The key's padded blocks
 * are computed once; each request then costs two one-shot hashes, where `createHmac` builds and
 * keys an object per call (about three times the cost, on the hot path of every Basic request).
 */
export function credentialKeyer(key: Buffer): (c: Credential) => string {
  const block = Buffer.alloc(64);
  (key.length > 64 ? hash('sha256', key, 'buffer') : key).copy(block);
  const inner = Buffer.from(block.map((b) => b ^ 0x36));
  const outer = Buffer.from(block.map((b) => b ^ 0x5c));
  return (c) => {
    const message = Buffer.concat([inner, Buffer.from(`${c.clientId}\0${c.clientSecret}`, 'utf8')]);
    return hash('sha256', Buffer.concat([outer, hash('sha256', message, 'buffer')]), 'base64url');
  };
}
