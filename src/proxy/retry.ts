import type { Dispatcher } from 'undici';
import { ReplayingForwarding } from './replay.js';

/** The connection broke under the request: closed or reset by the gateway or something between. */
const BROKEN = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ETIMEDOUT']);

/** Methods safe to send twice (RFC 9110 §9.2.2); any request with an `Idempotency-Key` is too. */
const REPEATABLE = new Set(['GET', 'HEAD', 'OPTIONS']);

function hasIdempotencyKey(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() === 'idempotency-key') return true;
  }
  return false;
}

/**
 * Forwarding that survives a pooled connection the gateway closed under it (README "When things
 * fail"): when the connection breaks after the request was sent and before any byte of the
 * answer arrived, a request that is safe to repeat (`GET`, `HEAD`, `OPTIONS`, or one with an
 * `Idempotency-Key`, whose body, if any, was all kept by the replay copy) is sent once more, on
 * a new connection, invisibly to the caller. Anything else is answered
 * `502 upstream_disconnected` by forwarding.ts; a `POST` is never sent twice.
 *
 * A retry is no 401 replay: it is not counted as one, and a 401 after it may still be replayed.
 */
export class RetryingForwarding extends ReplayingForwarding {
  private retried = false;
  /** Bytes of the current attempt's answer arrived. */
  private answering = false;

  protected override upstream(): Dispatcher {
    return this.retried ? this.ctx.freshPool : this.ctx.pool;
  }

  override onBodySent(chunk: Buffer): void {
    // The retry sends the copy itself: it is not copied again.
    if (!this.retried) super.onBodySent(chunk);
  }

  override onRequestStart(controller: Dispatcher.DispatchController): void {
    this.answering = false;
    super.onRequestStart(controller);
  }

  override onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    parsed: Record<string, string | string[] | undefined>,
  ): void {
    this.answering = true;
    super.onResponseStart(controller, statusCode, parsed);
  }

  override onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    const body = this.mayRetry(err) ? this.wholeBody() : undefined;
    if (body === undefined) {
      super.onResponseError(controller, err);
      return;
    }
    this.retried = true;
    this.controller = undefined;
    this.ctx.log.info(
      { reason: (err as { code?: string }).code },
      'the connection to the gateway broke before an answer; sending the request again on a new connection',
    );
    if (this.canSend()) this.send(this.source.authorization() ?? this.auth!, body);
  }

  /** Sent on a connection that broke before any answer byte, not yet retried, and safe to repeat. */
  private mayRetry(err: Error): boolean {
    if (this.finished || this.retried || !this.sent || this.answering) return false;
    if (!BROKEN.has((err as { code?: string }).code ?? '')) return false;
    return REPEATABLE.has(this.req.method!) || hasIdempotencyKey(this.headers.forward);
  }
}
