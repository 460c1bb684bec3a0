import type { Dispatcher } from 'undici';
import type { Authorization } from '../token/authorization.js';
import { Forwarding } from './forwarding.js';

/**
 * Forwarding that survives one gateway 401 (a token revoked before its expiry): the token is
 * dropped and a new one fetched (one fetch for all the requests that met it), and the request is
 * sent once more with it, when its whole body is at hand: none, or one of at most
 * `REPLAY_BODY_LIMIT_BYTES`, copied while it streamed. The 401's own body is read and dropped.
 * Otherwise the 401 goes to the caller as it is. Every 401 is reported, replayed or not.
 * A DPoP gateway's 401 asking for a nonce (RFC 9449 §9) is replayed once too, under the same body
 * rules, with a new proof carrying the nonce: the token is kept and no refresh is forced.
 *
 * The replay wraps the streaming of forwarding.ts by overriding its handler steps; a request
 * that meets no 401 pays one status comparison.
 */
export class ReplayingForwarding extends Forwarding {
  private replayed = false;
  /** A DPoP gateway asked for a nonce: the replay keeps the token and signs a new proof with the nonce. */
  private nonceReplay = false;
  private nonceReplayed = false;
  /** The 401 being read and dropped before the replay. */
  private discarding = false;
  /** The body as sent so far, while it may still be replayed. */
  private copy: Buffer[] | undefined;
  private copyBytes = 0;

  /** Starts copying the body when it may fit under the replay limit. */
  override start(): void {
    const limit = this.ctx.replayBodyLimitBytes;
    const length = this.headers.contentLength;
    if (this.headers.hasBody && limit > 0 && (length === undefined || Number(length) <= limit)) this.copy = [];
    super.start();
  }

  onBodySent(chunk: Buffer): void {
    if (this.copy === undefined || this.replayed) return;
    this.copyBytes += chunk.length;
    if (this.copyBytes > this.ctx.replayBodyLimitBytes) this.copy = undefined;
    else this.copy.push(chunk);
  }

  override onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    parsed: Record<string, string | string[] | undefined>,
  ): void {
    // A DPoP-bound token's answers carry the gateway's nonces (Bearer: one property read).
    const nonceAsked = this.auth?.answered?.(statusCode, parsed) === true;
    if (nonceAsked && !this.finished) {
      // RFC 9449 §9: not a refusal of the token, which is kept; replayed once with the nonce.
      const replay = !this.nonceReplayed && this.canReplay();
      if (!replay) this.ctx.recorder.upstreamUnauthorized(false);
      else {
        this.nonceReplay = this.discarding = true;
        return;
      }
    } else if (statusCode === 401 && !this.finished) {
      // The token is dropped and another fetched in every case; only the replay needs the body.
      const renewed = this.source.invalidate(this.auth!.token);
      const replay = !this.replayed && this.canReplay() && renewed;
      this.ctx.recorder.upstreamUnauthorized(replay);
      if (replay) {
        this.discarding = true;
        return;
      }
    }
    // The answer goes to the caller: the body will not be sent again, and its copy goes at once.
    if (statusCode >= 200) this.copy = undefined;
    super.onResponseStart(controller, statusCode, parsed);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.discarding) super.onResponseData(controller, chunk);
  }

  override onResponseEnd(): void {
    if (!this.discarding || this.finished) {
      super.onResponseEnd();
      return;
    }
    this.discarding = false;
    this.controller = undefined;
    const held = this.source.authorization();
    if (this.nonceReplay) {
      this.nonceReplay = false;
      this.nonceReplayed = true;
      this.replay(held ?? this.auth!);
      return;
    }
    this.replayed = true;
    if (held !== undefined && held.token !== this.auth!.token) this.replay(held);
    else this.source.authorize().then(this.replay.bind(this), this.fail.bind(this));
  }

  /** Sends the request again (with a new proof, for a DPoP-bound token) and the copied body. */
  private replay(auth: Authorization): void {
    if (!this.canSend()) return;
    this.send(auth, this.copy === undefined ? null : Buffer.concat(this.copy, this.copyBytes));
  }

  /**
   * The request body for sending it again: null when it has none; the copy when all of it was
   * read and kept (within `REPLAY_BODY_LIMIT_BYTES`); else undefined.
   */
  protected wholeBody(): Buffer | null | undefined {
    if (!this.headers.hasBody) return null;
    if (this.copy === undefined || !this.req.readableEnded) return undefined;
    return Buffer.concat(this.copy, this.copyBytes);
  }

  /** A replay needs the whole body: none, or all of it copied while it streamed. */
  private canReplay(): boolean {
    if (!this.headers.hasBody) return true;
    return this.copy !== undefined && this.req.complete;
  }
}
