import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../core/clock.js';
import type { OverloadAction } from '../overload/overload-guard.js';
import type { Recorder } from './observer.js';

/**
 * Callers that stop reading their answer (docs/forwarding.md, "Limits under abuse";
 * docs/operations.md, "When memory runs short"). An exchange reports here each time its caller's
 * connection refuses more of the answer (backpressure); from then on two things watch it:
 *
 * - the send timeout, nginx's `send_timeout`: a caller that takes no byte of the answer waiting for
 *   it for `UPSTREAM_IDLE_TIMEOUT_MS` is cut off, counted and logged as a stall. It is the caller's
 *   socket timeout, which Node refreshes on every read and every write that completes, and holds
 *   back while a write is still going out in part: no timer of ours per chunk;
 * - the overload action (Envoy's `reset_high_memory_stream`): while new requests are shed, the
 *   overload guard asks to end the exchanges whose callers have taken nothing for a while, those
 *   holding the most unsent answer first.
 *
 * An exchange whose caller always keeps up never comes here: small answers cost nothing.
 */
export interface StalledCallers extends OverloadAction {
  /** The caller's connection took none of what was just written: `res` holds unsent answer. */
  blocked(req: IncomingMessage, res: ServerResponse): void;
}

interface Watched {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** When the caller last took nothing of what waited for it; 0 while it keeps up. */
  since: number;
  /** The unsent answer when last looked at: less later means the caller took some. */
  unsent: number;
  /** The bytes of the write under way that the kernel had not taken, when last looked at. */
  queued: number;
}

/**
 * The bytes of the write under way that the kernel has not taken yet: it shrinks as a caller
 * takes part of a write, which the unsent answer shows only once the whole write is taken. Node's
 * own socket timeout reads the same count to tell a slow write from a stalled one.
 */
function queuedBytes(res: ServerResponse): number {
  return (res.socket as { _handle?: { writeQueueSize?: number } } | null)?._handle?.writeQueueSize ?? 0;
}

const kWatched = Symbol('stalled-caller');
type Tagged = ServerResponse & { [kWatched]?: Watched };

export interface StalledCallersOptions {
  /** `UPSTREAM_IDLE_TIMEOUT_MS`: the longest a caller may take nothing of its answer. */
  sendTimeoutMs: number;
  recorder: Recorder;
  clock: Clock;
}

export function createStalledCallers(options: StalledCallersOptions): StalledCallers {
  const { sendTimeoutMs, recorder, clock } = options;
  const watched = new Set<Watched>();

  /** The caller caught up: it is no longer taking nothing. */
  function onDrain(this: Tagged): void {
    this[kWatched]!.since = 0;
  }
  function onClose(this: Tagged): void {
    watched.delete(this[kWatched]!);
  }
  /** The caller's socket went quiet: cut it off when answer bytes wait for it (else the silence is the gateway's). */
  function onSendTimeout(this: Tagged): void {
    const w = this[kWatched]!;
    if (this.destroyed || this.writableLength === 0) return;
    recorder.stalled(w.req, 'send', sendTimeoutMs);
    this.destroy();
  }

  return {
    blocked(req, res) {
      const tagged = res as Tagged;
      let w = tagged[kWatched];
      if (w === undefined) {
        w = { req, res, since: clock.now(), unsent: res.writableLength, queued: queuedBytes(res) };
        tagged[kWatched] = w;
        watched.add(w);
        res.on('drain', onDrain).once('close', onClose).on('timeout', onSendTimeout);
      } else if (w.since === 0) {
        w.since = clock.now();
      }
      w.unsent = res.writableLength;
      w.queued = queuedBytes(res);
      // The exchange may have cleared the socket's timeout once the request body was in (exchange.ts).
      if (res.socket !== null && res.socket.timeout !== sendTimeoutMs) res.setTimeout(sendTimeoutMs);
    },

    endStalled(bytes, idleMs) {
      const now = clock.now();
      const idle: Watched[] = [];
      for (const w of watched) {
        const unsent = w.res.writableLength;
        const queued = queuedBytes(w.res);
        if (unsent < w.unsent || queued !== w.queued) w.since = now;
        w.unsent = unsent;
        w.queued = queued;
        if (w.since !== 0 && unsent > 0 && now - w.since >= idleMs) idle.push(w);
      }
      idle.sort((a, b) => b.unsent - a.unsent);
      let ended = 0;
      for (let freed = 0; ended < idle.length && freed < bytes; ended++) {
        const w = idle[ended]!;
        freed += w.unsent;
        recorder.overloadReset(w.req, now - w.since);
        w.res.destroy();
      }
      return ended;
    },
  };
}
