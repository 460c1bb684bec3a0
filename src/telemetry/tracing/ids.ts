/**
 * Trace and span ids (W3C Trace Context, "trace-id" and "parent-id") as bytes: random bytes cut
 * from a block filled 4 KiB at a time, which the requests and spans pointing into it keep alive
 * until they end and are exported. A span's ids stay bytes from here to the export
 * (otlp-encoding.ts copies them), and only the `traceparent` the gateway gets is written in hex.
 */
import { randomFillSync } from 'node:crypto';

/**
 * A block's size (a multiple of 8): 64 sampled requests' ids. Small, since a request that stays
 * open (a long download, a stream) keeps its block alive: at most 4 KiB each; a fill costs about
 * 4 µs whatever its size up to here, 30 ns a request.
 */
const BLOCK_BYTES = 4 * 1024;

/**
 * A span's ids, in 32 bytes of a block from `at`: its trace id (16 bytes), its span id (8), its
 * parent's span id (8; unused for a root).
 */
export const TRACE_ID = 0;
export const SPAN_ID = 16;
export const PARENT_ID = 24;
export const SLOT_BYTES = 32;

/** Where random ids are taken from. */
export class IdSource {
  /** The block the last {@link take} cut from. */
  block: Buffer;
  private at: number;

  /**
   * `fill` fills a buffer with random bytes: crypto's by default, which fills 16 KiB in about
   * 5 µs where `Math.random`, OpenTelemetry's choice, takes 37 µs.
   */
  constructor(private readonly fill: (buf: Buffer) => void = randomFillSync) {
    this.block = Buffer.alloc(0);
    this.at = 0;
  }

  /**
   * Takes `bytes` random bytes (a multiple of 8, at most a block), no 8-byte group of them all
   * zero (an id of zeros is invalid: its last byte is made 1, as OpenTelemetry does); returns
   * where they start in {@link block}, which may be a new one.
   */
  take(bytes: number): number {
    if (this.at + bytes > this.block.length) {
      this.block = Buffer.allocUnsafeSlow(BLOCK_BYTES);
      this.fill(this.block);
      this.at = 0;
    }
    const start = this.at;
    const block = this.block;
    this.at += bytes;
    for (let group = start; group < this.at; group += 8) {
      if (block[group] !== 0) continue;
      let i = group + 1;
      while (i < group + 7 && block[i] === 0) i += 1;
      if (block[i] === 0) block[i] = 1;
    }
    return start;
  }
}

/** Copies `length` bytes of an id from one place to another (ids are 8 or 16 bytes: a loop is cheapest). */
export function copyId(from: Uint8Array, fromAt: number, to: Uint8Array, toAt: number, length: number): void {
  for (let i = 0; i < length; i++) to[toAt + i] = from[fromAt + i]!;
}
