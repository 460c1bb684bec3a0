import { sameFingerprint, type SlotKey } from './slot-key.js';
import type { StoredToken } from './contract.js';

/**
 * An entry as the store holds it, a hash of three fields: `exp`, the token's last usable moment
 * (Unix milliseconds, in clear, so a script can refuse a stale overwrite); `fp`, the token's
 * fingerprint (so a script can delete only a rejected token); `ct`, the token with its type and
 * times, sealed under the credential's key with the entry's name as associated data (so an entry
 * copied under another name does not open).
 */
export interface EntryFields {
  readonly exp: string;
  readonly fp: string;
  readonly ct: string;
}

interface Sealed {
  t: string;
  y: 'Bearer' | 'DPoP';
  i: number;
  e: number;
  u: number;
}

/** The fields to store for `token`. */
export function sealEntry(key: SlotKey, token: StoredToken): EntryFields {
  const sealed: Sealed = {
    t: token.accessToken,
    y: token.tokenType,
    i: Math.floor(token.issuedAtMs),
    e: Math.floor(token.expiresAtMs),
    u: Math.floor(token.usableUntilMs),
  };
  return { exp: String(sealed.u), fp: key.fingerprint(token.accessToken), ct: key.seal(JSON.stringify(sealed), key.entryKey) };
}

const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * The token an entry holds, or undefined when it is not one this key wrote: it does not decrypt,
 * does not parse, or disagrees with its clear fields (an `exp` or `fp` changed beside it).
 */
export function openEntry(
  key: SlotKey,
  fields: { exp?: string | undefined; fp?: string | undefined; ct?: string | undefined },
): StoredToken | undefined {
  if (fields.exp === undefined || fields.fp === undefined || fields.ct === undefined) return undefined;
  const text = key.open(fields.ct, key.entryKey);
  if (text === undefined) return undefined;
  let s: Partial<Sealed>;
  try {
    s = JSON.parse(text) as Partial<Sealed>;
  } catch {
    return undefined;
  }
  if (typeof s !== 'object' || s === null || typeof s.t !== 'string' || s.t === '' || (s.y !== 'Bearer' && s.y !== 'DPoP'))
    return undefined;
  if (!isTime(s.i) || !isTime(s.e) || !isTime(s.u) || s.i > s.u || s.u > s.e) return undefined;
  if (fields.exp !== String(s.u) || !sameFingerprint(fields.fp, key.fingerprint(s.t))) return undefined;
  return { accessToken: s.t, tokenType: s.y, issuedAtMs: s.i, expiresAtMs: s.e, usableUntilMs: s.u };
}

/** A failure record as sealed: the failed fetch's outcome and the next attempt's time (Unix ms, the writer's clock). */
export interface SealedFailure {
  readonly outcome: string;
  readonly nextAttemptAtMs: number;
}

/**
 * The shared failure record's value: the outcome and the next attempt's time, sealed under the
 * record's own name, so a record replayed later asks for no wait past the time it was written for.
 */
export function sealFailure(key: SlotKey, failure: SealedFailure): string {
  return key.seal(JSON.stringify({ o: failure.outcome, n: Math.ceil(failure.nextAttemptAtMs) }), key.failureKey);
}

/** What a failure record holds, or undefined when this key did not write it or it lacks the next attempt's time. */
export function openFailure(key: SlotKey, value: string): SealedFailure | undefined {
  const text = key.open(value, key.failureKey);
  if (text === undefined) return undefined;
  try {
    const { o, n } = JSON.parse(text) as { o?: unknown; n?: unknown };
    return typeof o === 'string' && isTime(n) ? { outcome: o, nextAttemptAtMs: n } : undefined;
  } catch {
    return undefined;
  }
}
