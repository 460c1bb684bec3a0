/**
 * Sends batches of spans to the collector as OTLP over HTTP (protobuf), encoded by otlp-encoding.ts
 * and sent through the proxy's own dispatcher, so the collector is reached as every other outbound
 * call is (`CA_FILE`, the client certificate, the egress proxy).
 */
import type { Dispatcher } from 'undici';
import type { Log } from '../../core/log.js';
import { exportFailure, postExport } from './collector-export.js';
import type { SendBatch } from './export-queue.js';

export interface SenderOptions<T> {
  url: URL;
  headers: Readonly<Record<string, string>>;
  dispatcher: Dispatcher;
  encode: (spans: T[]) => Uint8Array;
  log: Log;
}

/**
 * Creates the sender; a failure is logged once until an export succeeds again, with what the
 * answer suggests is wrong (never with the headers).
 */
export function createOtlpSender<T>(options: SenderOptions<T>): SendBatch<T> {
  const { url, dispatcher, encode, log } = options;
  let failing = false;
  const failed = (reason: string, hint: string | undefined): false => {
    if (!failing) {
      log.warn(
        { collector: url.origin, reason, ...(hint === undefined ? {} : { hint }) },
        'spans could not be exported; dropping them until the collector answers',
      );
    }
    failing = true;
    return false;
  };
  return async (spans) => {
    let body: Uint8Array;
    try {
      body = encode(spans);
    } catch {
      return failed('the spans could not be encoded', undefined);
    }
    const outcome = await postExport(url, options.headers, dispatcher, body);
    if (!outcome.ok) {
      const failure = exportFailure(url, outcome);
      return failed(failure.reason, failure.hint);
    }
    if (failing) log.info({ collector: url.origin }, 'spans are exported again');
    failing = false;
    return true;
  };
}
