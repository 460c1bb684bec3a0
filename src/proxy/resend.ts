import type { IncomingMessage } from 'node:http';
import type { Authorization } from '../token/held-token.js';
import type { Authorizer } from './authorizer.js';
import type { Recorder } from './recorder.js';

/**
 * When a request is sent to the gateway a second time: two small policies the exchange
 * (exchange.ts) consults at fixed points, and the copy of the body both need.
 *
 * - The replay after a gateway 401 (a token revoked before its expiry), consulted when the 401's
 *   head arrives ({@link replayAfter}): the token is dropped and a new one fetched (one fetch for
 *   all the requests that met it); the 401's body is read and dropped, and at its end the request
 *   is sent once more ({@link replayAuthorization}). A DPoP gateway's 401 asking for a nonce
 *   (RFC 9449 §9) is replayed once too, with a new proof carrying the nonce: the token is kept and
 *   no refresh is forced. Every 401 is reported, replayed or not.
 * - The retry after a pooled connection the gateway closed under the request (docs/forwarding.md,
 *   "Bodies and connections"), consulted when an attempt fails ({@link mayRetry}): when the
 *   connection broke after the request was sent and before any byte of the answer arrived, a
 *   request safe to repeat is sent once more, on a new connection, invisibly to the caller. A
 *   retry is no 401 replay: it is not counted as one, and a 401 after it may still be replayed.
 *
 * Either needs the whole body at hand: none, or one of at most `REPLAY_BODY_LIMIT_BYTES`, copied
 * while it streamed ({@link BodyCopy}) and dropped as soon as the answer goes to the caller.
 */

/** The answer goes to the caller. */
export const NO_REPLAY = 0;
/** The token was refused: the request goes again with another. */
export const TOKEN_REPLAY = 1;
/** A DPoP gateway asked for a nonce: the request goes again with the same token and a new proof. */
export const NONCE_REPLAY = 2;
/** One of the above; for the replays a request has had, their sum (each happens once at most). */
export type Replay = number;

/** A gateway 401 as the replay policy weighs it. */
export interface Refusal {
  /** A DPoP nonce demand (RFC 9449 §9), not a refusal of the token. */
  readonly nonceAsked: boolean;
  /** The replays the request has had. */
  readonly done: Replay;
  /** Its whole body is at hand for sending again. */
  readonly bodyAtHand: boolean;
  /** How the refused attempt was authorised. */
  readonly refused: Authorization;
}

/**
 * Whether a gateway 401 is replayed, and how; `authorizer` is the request's token source. A
 * refused token is dropped whether or not the request is replayed: only the replay needs the body.
 * Every 401 is reported to `recorder`.
 */
export function replayAfter(refusal: Refusal, authorizer: Pick<Authorizer, 'invalidate'>, recorder: Recorder): Replay {
  const { done, bodyAtHand } = refusal;
  if (refusal.nonceAsked) {
    // Not a refusal of the token, which is kept.
    if ((done & NONCE_REPLAY) === 0 && bodyAtHand) return NONCE_REPLAY;
    recorder.upstreamUnauthorized(false);
    return NO_REPLAY;
  }
  const renewed = authorizer.invalidate(refusal.refused.token);
  const replay = (done & TOKEN_REPLAY) === 0 && bodyAtHand && renewed;
  recorder.upstreamUnauthorized(replay);
  return replay ? TOKEN_REPLAY : NO_REPLAY;
}

/**
 * How a replay is authorised, given the authorization the source holds now: after a nonce demand,
 * that one (the same token unless it was refreshed meanwhile) or the last; after a refused token,
 * that one if its token differs, else undefined: the token the source fetches next.
 */
export function replayAuthorization(replay: Replay, refused: Authorization, held: Authorization | undefined): Authorization | undefined {
  if (replay === NONCE_REPLAY) return held ?? refused;
  return held !== undefined && held.token !== refused.token ? held : undefined;
}

/** The connection broke under the request: closed or reset by the gateway or something between. */
const BROKEN = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ETIMEDOUT']);

/** Methods safe to send twice (RFC 9110 §9.2.2); any request with an `Idempotency-Key` is too. */
const REPEATABLE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether an attempt that failed with `err` after it was sent, before any byte of its answer,
 * is sent again: its connection broke, and the request is safe to repeat. Anything else is
 * answered `502 upstream_disconnected`; a `POST` is never sent twice.
 */
export function mayRetry(err: Error, method: string, headers: readonly string[]): boolean {
  if (!BROKEN.has((err as { code?: string }).code ?? '')) return false;
  if (REPEATABLE.has(method)) return true;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() === 'idempotency-key') return true;
  }
  return false;
}

/**
 * The copy of a request body kept while it streams, for sending it again: its exchange's, fed by
 * the exchange's one listener on the caller's body, and dropped as soon as the answer goes to the
 * caller or the body outgrows the limit.
 */
export class BodyCopy {
  private chunks: Buffer[] | undefined = [];

  /** A copy of at most `room` bytes. */
  constructor(private room: number) {}

  /** A chunk of the body, as undici sends it on. */
  add(chunk: Buffer): void {
    if (this.chunks === undefined) return;
    this.room -= chunk.length;
    if (this.room < 0) this.drop();
    else this.chunks.push(chunk);
  }

  /** Drops the copy: the answer went to the caller, or the body outgrew the limit. */
  drop(): void {
    this.chunks = undefined;
  }

  /** Whether the copy still holds every chunk seen so far. */
  get kept(): boolean {
    return this.chunks !== undefined;
  }

  /** The whole body, once it has all been read and kept. */
  body(): Buffer {
    return Buffer.concat(this.chunks!);
  }
}

/**
 * The copy for a body that may fit under `limit` bytes (`REPLAY_BODY_LIMIT_BYTES`), or undefined
 * when none is kept: no limit, or a `Content-Length` over it.
 */
export function copyFor(contentLength: string | undefined, limit: number): BodyCopy | undefined {
  if (limit === 0 || (contentLength !== undefined && Number(contentLength) > limit)) return undefined;
  return new BodyCopy(limit);
}

/** Whether the whole body is at hand for sending again: none, or all of it read and kept. */
export function bodyAtHand(req: IncomingMessage, hasBody: boolean, copy: BodyCopy | undefined): boolean {
  return !hasBody || (copy !== undefined && copy.kept && req.readableEnded);
}
