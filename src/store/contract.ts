/**
 * The shared token store as the token lifecycle sees it: one entry per credential, shared by every
 * proxy that holds the same credential and the same store (Redis or Valkey; an in-memory one for
 * tests and the fleet simulation). The lifecycle never learns how the store is reached.
 *
 * The rules the lifecycle builds on:
 *
 * - Every operation returns a value and never throws for an outage: a store that is down, slow,
 *   refusing the password, out of memory or failing over answers `{ kind: 'unavailable' }`, and
 *   the lifecycle then works as without a store (its own single flight and schedule).
 * - No operation takes longer than the store timeout (`TOKEN_STORE_TIMEOUT_MS`), connecting
 *   included. After a timeout, or a connection that fails, the store counts as down: operations
 *   answer `unavailable` at once, without touching the network, until a background check (with
 *   jitter) finds it again. A command the server refuses (out of memory, a replica after a
 *   failover) fails that operation alone.
 * - Times are Unix milliseconds. What a writer stored is by the writer's clock; what an operation
 *   returns for the reader to act on (`remainingMs`, `nextAttemptAtMs`) is by the reader's clock,
 *   bounded by the time to live the store itself counts, so pods whose clocks disagree cannot
 *   stretch a token's life.
 * - Nothing in the store is readable without the credential: entries are encrypted and named
 *   under a key derived from the credential's key material (`slot-key.ts`).
 *
 * How a lifecycle uses it, in brief: at start or at a refresh moment, `need()`, then `read()`: a
 * hit is adopted; a miss with a shared failure waits for its `nextAttemptAtMs`; otherwise
 * `takeLease()`: `acquired` fetches, then `write()` (or `recordFailure()`), then `release()`;
 * `taken` polls `read()` with jitter up to the fetch timeout, then tries the lease again;
 * `unavailable` fetches as without a store. After a gateway 401, `deleteIfSame(rejected)` and the
 * same again, never adopting the rejected token.
 */

/**
 * The longest lease any proxy takes: `TOKEN_FETCH_TIMEOUT_MS` is at most 120 s, and a lease lasts
 * a second longer. A lease with more time to live than this was not taken by a proxy.
 */
export const LEASE_LIMIT_MS = 121_000;

/** A token as the store holds it, decrypted. Times are Unix milliseconds by the writer's clock. */
export interface StoredToken {
  readonly accessToken: string;
  /** `DPoP` for a token bound to a key (RFC 9449 §5), else `Bearer`. */
  readonly tokenType: 'Bearer' | 'DPoP';
  /** When the token's request was sent: its lifetime, and so its refresh moment, count from here. */
  readonly issuedAtMs: number;
  /** When the token expires. */
  readonly expiresAtMs: number;
  /** Its last usable moment: the expiry less the margin in which a token is no longer used. */
  readonly usableUntilMs: number;
}

/**
 * A failed fetch another proxy recorded: no proxy fetches before `nextAttemptAtMs` while the store
 * is healthy, so a throttling identity provider sees one retry per backoff step from the fleet.
 */
export interface FailureRecord {
  /**
   * When the next attempt may start, by the reader's clock: the lesser of the time sealed in the
   * record and the record's time to live in the store (a record replayed or stretched with
   * `PEXPIRE` waits no longer than its writer asked).
   */
  readonly nextAttemptAtMs: number;
  /** The next attempt's time as sealed (the writer's clock): the same record read again has the same. */
  readonly sealedAtMs: number;
  /**
   * When the store drops the record, by the reader's clock (its time to live): a record kept alive
   * past the longest wait the reader's backoff could ask for is cut to it ({@link Slot.cutFailure}).
   */
  readonly keptUntilMs: number;
  /** The failed fetch's outcome as the recording proxy gave it (`rate_limited`, `server_error`, ...). */
  readonly outcome: string;
}

/** Why an operation could not be done; every one of them means "work as without a store". */
export type UnavailableReason =
  /** The store counts as down since an earlier failure; nothing was sent. */
  | 'down'
  /** No answer within the store timeout (connecting included); the store now counts as down. */
  | 'timeout'
  /** The connection failed or the server refused the command (password, permissions, memory, failover). */
  | 'error';

export interface StoreUnavailable {
  readonly kind: 'unavailable';
  readonly reason: UnavailableReason;
  /**
   * What is wrong in a sentence an operator can act on, naming the setting to look at
   * (`TOKEN_STORE_URL`, `TOKEN_STORE_PASSWORD_FILE`); never a password, token or key.
   * For `check` and for logs; the store already logs each change of its state once.
   */
  readonly detail: string;
}

/**
 * What a read finds.
 * - `hit`: a usable token. Use it until `now + remainingMs` by your clock (the lesser of its last
 *   usable moment and the entry's time to live in the store). Schedule by durations, never by the
 *   writer's absolute times: the token was issued `usableUntilMs - issuedAtMs - remainingMs` ago
 *   (at least), and lives `expiresAtMs - issuedAtMs` in all.
 * - `miss`: no usable entry. `invalid` is true when an entry was there but did not decrypt or
 *   parse (written under another key, or overwritten with garbage): it is never served, and the
 *   next {@link Slot.write} replaces it.
 * Both carry the shared failure, if one is recorded: do not fetch before its `nextAttemptAtMs`.
 */
export type ReadResult =
  | { readonly kind: 'hit'; readonly token: StoredToken; readonly remainingMs: number; readonly failure: FailureRecord | undefined }
  | { readonly kind: 'miss'; readonly invalid: boolean; readonly failure: FailureRecord | undefined }
  | StoreUnavailable;

/**
 * What a write did.
 * - `written`: the entry now holds this token, with a time to live ending at its last usable moment;
 *   a recorded shared failure is cleared.
 * - `kept`: the store already holds a token usable as long or longer (a late writer never
 *   overwrites a fresher token), or this token has no life left; the entry is unchanged.
 */
export type WriteResult = { readonly kind: 'written' } | { readonly kind: 'kept' } | StoreUnavailable;

/** A lease held by this proxy: the right to fetch for the whole fleet. */
export interface Lease {
  /** When the lease lapses by itself, by this proxy's clock: the fetch timeout plus a second after it was taken. */
  readonly expiresAtMs: number;
  /**
   * Gives the lease up, only if it is still this one (compare and delete): after the fetch's
   * entry is written, or after its failure is recorded. `lapsed`: it had expired, and another
   * proxy may hold the lease now (left alone).
   */
  release(): Promise<{ readonly kind: 'released' } | { readonly kind: 'lapsed' } | StoreUnavailable>;
}

/**
 * What taking the lease found.
 * - `acquired`: fetch, then {@link Slot.write} (or {@link Slot.recordFailure}),
 *   then {@link Lease.release}.
 * - `taken`: another proxy is fetching: keep reading the entry (polling with jitter) up to the
 *   fetch timeout, then try for the lease again. A lease found with a time to live longer than any
 *   proxy's settings allow ({@link LEASE_LIMIT_MS}), or none, is cut to this proxy's lease length
 *   first (and counted as `lease_too_long`).
 */
export type LeaseResult = { readonly kind: 'acquired'; readonly lease: Lease } | { readonly kind: 'taken' } | StoreUnavailable;

/**
 * What a delete-if-same did: `deleted` when the entry held the rejected token (and is gone);
 * `kept` when it holds another token (adopt it with a read) or nothing.
 */
export type DeleteResult = { readonly kind: 'deleted' } | { readonly kind: 'kept' } | StoreUnavailable;

/** What recording a failed fetch did: `recorded`, or nothing to record when the time has passed. */
export type RecordResult = { readonly kind: 'recorded' } | StoreUnavailable;

/**
 * One credential's entry, lease and shared failure, under the key derived for it. Obtained from
 * {@link TokenStore.slot}; a rotated secret, private key or key file is a new credential
 * (a new namespace: nothing written under the old key is read under the new one).
 */
export interface Slot {
  /** Reads the entry and the shared failure in one round trip. */
  read(): Promise<ReadResult>;
  /**
   * Writes a fetched token, replacing the entry only when the token is usable longer than the one
   * it holds (or when the entry held garbage that a read of this handle found).
   */
  write(token: StoredToken): Promise<WriteResult>;
  /**
   * Takes the lease (`SET … NX PX`, a random value), for the fetch timeout plus a second. A lease
   * someone left without a time to live is given one, so no stray key stalls the fleet.
   */
  takeLease(): Promise<LeaseResult>;
  /**
   * After a gateway `401`: deletes the entry only if it holds `accessToken` (compared by its
   * fingerprint), so proxies meeting the same rejection delete it once and adopt the next token,
   * never a newer token another proxy wrote meanwhile.
   */
  deleteIfSame(accessToken: string): Promise<DeleteResult>;
  /**
   * Records a failed fetch beside the entry: no proxy fetches before `nextAttemptAtMs` (this
   * proxy's clock: its backoff, or the token endpoint's `Retry-After`). `outcome` is the fetch
   * outcome (`rate_limited`, ...). Readers see it until that moment or until a token is written.
   */
  recordFailure(failure: { nextAttemptAtMs: number; outcome: string }): Promise<RecordResult>;
  /**
   * Cuts the failure record's time to live to `limitMs` when it has more (a script: only ever
   * shortened), and counts it as `failure_too_long`: for a record kept alive past the longest wait
   * the reader's own backoff could ask for (a replayed record, a stretched `PEXPIRE`). `cut` when
   * it was longer.
   */
  cutFailure(limitMs: number): Promise<{ readonly kind: 'cut' } | { readonly kind: 'kept' } | StoreUnavailable>;
}

/** What {@link TokenStore.slot} needs: what the credential is, and what its key is made from. */
export interface SlotSeed {
  /**
   * Everything that makes two proxies' credentials the same (token URL, client id, authentication
   * method, scope, extra token parameters, and the thumbprints of a DPoP key from a file or of the
   * client certificate): only proxies with equal descriptions share an entry. It salts the key
   * derivation and names the entry (as an HMAC: it never reaches the store in clear). Build it
   * with `describeCredential` from the parts in a fixed order, once per credential.
   */
  readonly description: string;
  /**
   * The secret material the store key is derived from, as bytes: the client secret, the private
   * key (its PEM), or `TOKEN_STORE_KEY_FILE`'s content (at least 32 bytes). Never stored, never logged.
   */
  readonly keyMaterial: Uint8Array;
}

/**
 * Something in the store no proxy of the fleet writes, as counted by
 * `ticket_auth_proxy_token_store_anomalies_total`'s `kind` label: someone else writes the prefix.
 * - `lease_too_long`: a lease with a time to live longer than any proxy's settings allow (or none), cut;
 * - `lease_wait_exhausted`: a proxy waited a whole lease length for other proxies' fetches while leases kept being taken;
 * - `failure_too_long`: a failure record asking for a wait, or kept alive, longer than this proxy's own backoff could give (cut to that);
 * - `invalid_entry`: an entry that does not decrypt or parse (never served);
 * - `invalid_failure`: a failure record that does not decrypt or parse, or has no time to live (ignored).
 */
export type AnomalyKind = 'lease_too_long' | 'lease_wait_exhausted' | 'failure_too_long' | 'invalid_entry' | 'invalid_failure';

export const ANOMALY_KINDS: readonly AnomalyKind[] = [
  'lease_too_long',
  'lease_wait_exhausted',
  'failure_too_long',
  'invalid_entry',
  'invalid_failure',
];

/** An operation as counted by `ticket_auth_proxy_token_store_operations_total`'s `operation` label. */
export type StoreOperation = 'read' | 'write' | 'lease' | 'delete';

/** An operation's result as counted by the same counter's `result` label. */
export type StoreResult = 'hit' | 'miss' | 'ok' | 'taken' | 'invalid' | 'error' | 'timeout';

/**
 * What the metrics see of the store; the wiring hands an implementation in (the store imports no
 * metrics library).
 */
export interface TokenStoreObserver {
  /**
   * Once per operation. `read`: hit, miss, invalid, error, timeout. `write` (a token, or a shared
   * failure): ok, error, timeout. `lease` (take or release): ok, taken, error, timeout. `delete`:
   * ok, error, timeout. An operation refused at once while the store counts as down is an `error`.
   */
  onOperation?(operation: StoreOperation, result: StoreResult): void;
  /**
   * The store's health for `ticket_auth_proxy_token_store_up`: true when the last operation or
   * background check succeeded. Called with the first outcome, then on each change.
   */
  onHealth?(up: boolean): void;
  /** Once per anomaly seen, by the store or by a user of it ({@link TokenStore.anomaly}). */
  onAnomaly?(kind: AnomalyKind): void;
}

/** The store itself: one per process, shared by the configured credential and pass-through ones. */
export interface TokenStore {
  /**
   * The store for one credential. Derives its key with scrypt, off the event loop and one
   * derivation at a time (tens of milliseconds of CPU and a passing 32 MiB each: see
   * `slot-key.ts`), then resolves. Call it once per credential and key material, at start for
   * the configured credential (before the first read), on first use for a pass-through one, and
   * again when the material changes (a new namespace). Never rejects: should the derivation fail,
   * the credential's operations all answer `unavailable` (logged once).
   */
  slot(input: SlotSeed): Promise<Slot>;
  /**
   * Tells the store it is about to be needed (start, a refresh moment, a gateway 401, waiting for
   * another proxy's fetch, a pass-through credential's first use): it opens its connection now,
   * if it has none and is not down, so the operations that follow do not wait for it. The
   * connection closes by itself after 30 s without use. Never waits, never fails.
   */
  need(): void;
  /** True unless the store counts as down (operations would answer `unavailable` at once). */
  readonly up: boolean;
  /**
   * Tells of an anomaly a user of the store saw (a lease wait exhausted, a failure record past its
   * own backoff's bound): counted, and logged at `warn` at most once per kind per 10 minutes,
   * naming the store and the kind, never a key or a value.
   */
  anomaly(kind: AnomalyKind): void;
  /**
   * Checks the store now (connect, authenticate, `PING`), within the store timeout, whatever its
   * state: for `check`, which says whether the store is reachable and accepts the password.
   */
  probe(): Promise<{ readonly kind: 'ok' } | StoreUnavailable>;
  /** Stops the background check and closes the connection. */
  close(): Promise<void>;
}
