import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../core/clock.js';
import type { OverloadAction } from '../overload/overload-guard.js';
import type { Recorder } from './recorder.js';
import { queuedBytes } from './socket-write-queue.js';

/**
 * Callers that stop reading their answer (docs/forwarding.md, "Limits under abuse";
 * docs/operations.md, "When memory runs short"). An exchange reports here each time its caller's
 * connection refuses more of the answer (backpressure); from then on two things watch it:
 *
 * - the send timeout, nginx's `send_timeout`: a caller that takes no byte of the answer waiting for
 *   it for `UPSTREAM_IDLE_TIMEOUT_MS` is cut off, counted and logged as a stall, within a second of
 *   that: one sweep a second over the callers watched (while there are any) reads what each took
 *   since the last. The caller's socket timeout alone would be late: Node arms it again when a
 *   write still going out in part moves on, so a caller that reads nothing was cut after about
 *   twice the timeout. No timer of ours per chunk or per caller;
 * - the overload action (Envoy's `reset_high_memory_stream`): while new requests are shed, the
 *   overload guard asks to end the exchanges whose callers have taken nothing for a while, those
 *   holding the most unsent answer first.
 *
 * The watch's clock is the exchange's own fields ({@link WatchedCaller}); an exchange whose caller
 * always keeps up never comes here: small answers cost nothing.
 */
export interface StalledCallers extends OverloadAction {
  /** The caller's connection took none of what was just written: its response holds unsent answer. */
  blocked(exchange: WatchedCaller): void;
  /** The caller's socket went quiet: true when answer bytes waited for it, and it was cut off. */
  timedOut(exchange: WatchedCaller): boolean;
  /** The exchange's caller connection closed: no longer watched. */
  ended(exchange: WatchedCaller): void;
}

/** An exchange as the watch reads it: its caller, its route's settings, and the watch's clock, kept in its own fields. */
export interface WatchedCaller {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Its route's recorder: where a caller cut off is recorded. */
  readonly recorder: Recorder;
  /** Its route's `UPSTREAM_IDLE_TIMEOUT_MS`: the longest its caller may take nothing of its answer. */
  readonly sendTimeoutMs: number;
  /** When the caller last took nothing of what waited for it; 0 while it keeps up (the exchange resets it on `drain`). */
  stalledSince: number;
  /** The unsent answer when last looked at: less later means the caller took some. */
  unsentSeen: number;
  /** The bytes of the write under way that the kernel had not taken, when last looked at. */
  queuedSeen: number;
}

export interface StalledCallersOptions {
  clock: Clock;
}

/** How often the callers watched are looked at for the send timeout: the most it is late by. */
export const SEND_SWEEP_MS = 1_000;

export function createStalledCallers(options: StalledCallersOptions): StalledCallers {
  const { clock } = options;
  const watched = new Set<WatchedCaller>();

  /**
   * Reads what `w`'s caller took since last looked at: less answer unsent, or less of the write under
   * way left for the kernel to take, starts its stall afresh. (More of it left is a write just
   * begun, partly taken: not the caller reading.)
   */
  const look = (w: WatchedCaller, now: number): number => {
    const unsent = w.res.writableLength;
    const queued = queuedBytes(w.res);
    if (unsent < w.unsentSeen || queued < w.queuedSeen) w.stalledSince = now;
    w.unsentSeen = unsent;
    w.queuedSeen = queued;
    return unsent;
  };

  let sweep: unknown = undefined;
  /** The send timeout's sweep: cuts off each caller that has taken nothing for its route's idle timeout. */
  const sweepStalled = (): void => {
    sweep = undefined;
    const now = clock.now();
    for (const w of watched) {
      const unsent = look(w, now);
      if (w.stalledSince === 0 || unsent === 0 || w.res.destroyed || now - w.stalledSince < w.sendTimeoutMs) continue;
      w.recorder.stalled(w.req, 'send', w.sendTimeoutMs);
      w.res.destroy();
    }
    if (watched.size > 0) sweep = clock.setTimeout(sweepStalled, SEND_SWEEP_MS);
  };

  return {
    blocked(exchange) {
      const { res } = exchange;
      if (!watched.has(exchange)) {
        watched.add(exchange);
        exchange.stalledSince = clock.now();
      } else if (exchange.stalledSince === 0) {
        exchange.stalledSince = clock.now();
      }
      exchange.unsentSeen = res.writableLength;
      exchange.queuedSeen = queuedBytes(res);
      // The exchange may have cleared the socket's timeout once the request body was in.
      if (res.socket !== null && res.socket.timeout !== exchange.sendTimeoutMs) res.setTimeout(exchange.sendTimeoutMs);
      sweep ??= clock.setTimeout(sweepStalled, SEND_SWEEP_MS);
    },

    timedOut(exchange) {
      const { res } = exchange;
      if (res.destroyed || res.writableLength === 0) return false;
      exchange.recorder.stalled(exchange.req, 'send', exchange.sendTimeoutMs);
      res.destroy();
      return true;
    },

    ended(exchange) {
      watched.delete(exchange);
    },

    endStalled(bytes, idleMs) {
      const now = clock.now();
      const idle: WatchedCaller[] = [];
      for (const w of watched) {
        const unsent = look(w, now);
        if (w.stalledSince !== 0 && unsent > 0 && now - w.stalledSince >= idleMs) idle.push(w);
      }
      idle.sort((a, b) => b.unsentSeen - a.unsentSeen);
      let ended = 0;
      for (let freed = 0; ended < idle.length && freed < bytes; ended++) {
        const w = idle[ended]!;
        freed += w.unsentSeen;
        w.recorder.overloadReset();
        w.res.destroy();
      }
      return ended;
    },
  };
}
