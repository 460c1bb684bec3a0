import type { EntryFields } from './entry.js';

/** The keys of one credential, all in one hash slot (they share the hash tag). */
export interface SlotKeys {
  readonly entryKey: string;
  readonly leaseKey: string;
  readonly failureKey: string;
}

/**
 * What one read saw, in one round trip. Times to live are `PTTL`'s: milliseconds left, `-1` for
 * a key without one, `-2` for no key. No value longer than `STORE_VALUE_MAX_BYTES` (scripts.ts)
 * is read: an entry with such a field is `garbage`, and such a failure record reads `oversized`.
 */
export interface RawRead {
  /** The entry's fields; `garbage` when the key holds something other than a hash. */
  readonly entry: Partial<EntryFields> | 'garbage' | undefined;
  readonly entryTtlMs: number;
  /** The failure record's value, when the key holds a string. */
  readonly failure: string | undefined;
  readonly failureTtlMs: number;
}

/**
 * The store's primitives, as the Redis scripts define them and the in-memory store mirrors them
 * (one contract test runs against both). Each may throw; the caller bounds each with the store
 * timeout and turns every failure into a value with {@link StoreBackend.explain}.
 */
export interface StoreBackend {
  read(keys: SlotKeys): Promise<RawRead>;
  /**
   * Sets the entry to `fields` with a time to live of `ttlMs()` (asked once connected, so the time
   * spent connecting does not lengthen it), and deletes the failure record,
   * unless the entry holds an `exp` at least as late; an entry that is not a hash, has no number
   * in `exp`, or whose `ct` is `replaceCt` (garbage a read found) is replaced whatever it says.
   * True when written. Either way the failure record is deleted: a token was fetched.
   */
  write(keys: SlotKeys, fields: EntryFields, ttlMs: () => number, replaceCt: string | undefined): Promise<boolean>;
  /**
   * `SET lease value NX PX ttlMs`: `acquired` when taken. Otherwise a lease key without a time to
   * live, or with more than `limitMs`, is given `ttlMs` (only ever shortened): `cut`; else `taken`.
   */
  acquire(leaseKey: string, value: string, ttlMs: number, limitMs: number): Promise<'acquired' | 'taken' | 'cut'>;
  /** Deletes the lease if it still holds `value`. True when deleted. */
  release(leaseKey: string, value: string): Promise<boolean>;
  /** Deletes the entry if its `fp` is `fingerprint`. True when deleted. */
  deleteIf(entryKey: string, fingerprint: string): Promise<boolean>;
  /** `SET failureKey value PX ttlMs`. */
  recordFailure(failureKey: string, value: string, ttlMs: number): Promise<void>;
  /**
   * Gives the failure record `limitMs` to live when it has more (only ever shortened; one without
   * a time to live is left to the next write, which deletes it). True when cut.
   */
  cutFailure(failureKey: string, limitMs: number): Promise<boolean>;
  /** Connects if needed, authenticates, `PING`; then closes the connection unless an operation uses it. */
  ping(): Promise<void>;
  /** Opens the connection now if there is none; never throws. */
  warm(): void;
  /** Drops the connection at once (after a timeout): commands waiting on it fail; the next one connects anew. */
  reset(): void;
  close(): Promise<void>;
  /** What a thrown failure means, in words an operator can act on; never a password. */
  explain(err: unknown): BackendFailure;
}

/** A failure as {@link StoreBackend.explain} reads it. */
export interface BackendFailure {
  /** Names the problem, the same for the same problem: a change is logged once (`auth`, `ECONNREFUSED`, `oom`, ...). */
  readonly problem: string;
  /**
   * The connection failed (unreachable, refused, TLS, the password): the store counts as down
   * until a background check finds it. Otherwise the server refused one command (out of memory,
   * a replica after a failover, a permission) and only that operation failed.
   */
  readonly connection: boolean;
  /** A configuration to fix (the password, the user's permissions): logged at error, not warn. */
  readonly severe: boolean;
  /** The sentence for logs and `check`, naming the setting to look at. */
  readonly detail: string;
}
