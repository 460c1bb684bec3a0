/**
 * Sends batches of spans to the collector as OTLP over HTTP (protobuf), serialized by the
 * OpenTelemetry library and sent through the proxy's own dispatcher, so the collector is reached
 * as every other outbound call is (`CA_FILE`, the client certificate, the egress proxy).
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import type { Dispatcher } from 'undici';
import type { Log } from '../../core/log.js';
import type { SendBatch } from './export-queue.js';

/** The longest an export may take, answer included, before its spans are dropped. */
export const EXPORT_TIMEOUT_MS = 10_000;

export interface SenderOptions {
  url: URL;
  headers: Readonly<Record<string, string>>;
  dispatcher: Dispatcher;
  serialize: (spans: ReadableSpan[]) => Uint8Array | undefined;
  log: Log;
}

/** Creates the sender; a failure is logged once until an export succeeds again (never with the headers). */
export function createOtlpSender(options: SenderOptions): SendBatch {
  const { url, dispatcher, serialize, log } = options;
  const headers = { ...options.headers, 'content-type': 'application/x-protobuf' };
  let failing = false;
  const failed = (reason: string): false => {
    if (!failing) log.warn({ collector: url.origin, reason }, 'spans could not be exported; dropping them until the collector answers');
    failing = true;
    return false;
  };
  return async (spans) => {
    const body = serialize(spans);
    if (body === undefined) return failed('the spans could not be serialized');
    try {
      const answer = await dispatcher.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers,
        body,
        headersTimeout: EXPORT_TIMEOUT_MS,
        bodyTimeout: EXPORT_TIMEOUT_MS,
        signal: AbortSignal.timeout(EXPORT_TIMEOUT_MS),
      });
      await answer.body.dump({ limit: 64 * 1024 });
      if (answer.statusCode < 200 || answer.statusCode > 299) return failed(`the collector answered ${answer.statusCode}`);
      if (failing) log.info({ collector: url.origin }, 'spans are exported again');
      failing = false;
      return true;
    } catch (err) {
      return failed((err as { code?: string }).code ?? (err as Error).name);
    }
  };
}
