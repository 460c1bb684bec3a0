/**
 * Trace and span ids (W3C Trace Context, "trace-id" and "parent-id"): random bytes in lower-case
 * hex, never all zero, taken from a pool filled a few kilobytes at a time rather than one call to
 * the random source per id.
 */
import { randomFillSync } from 'node:crypto';

/** The pool's size: 128 requests' ids per fill (a multiple of 8). */
const POOL_BYTES = 4096;

/**
 * Makes `bytes` random bytes in hex, for ids of 16 bytes (a trace) and 8 (a span), several at once
 * (one call, then a slice each, costs less than one call each): no 8-byte group is all zero.
 */
export type NextId = (bytes: number) => string;

/** Creates the id source; `fill` fills a buffer with random bytes (crypto's by default). */
export function createIds(fill: (buf: Buffer) => void = randomFillSync): NextId {
  const pool = Buffer.allocUnsafe(POOL_BYTES);
  let at = POOL_BYTES;
  return function newId(bytes) {
    if (at + bytes > POOL_BYTES) {
      fill(pool);
      at = 0;
    }
    const start = at;
    at += bytes;
    // An id of zeros is invalid (W3C Trace Context): a group of 8 zeros gets a last byte of 1, as
    // OpenTelemetry does for a whole id, so no id cut from it at a multiple of 8 is zero.
    for (let group = start; group < at; group += 8) {
      for (let i = group; i < group + 8 && pool[i] === 0; i++) if (i === group + 7) pool[i] = 1;
    }
    return pool.toString('hex', start, at);
  };
}
