/**
 * One export to the collector (an OTLP/HTTP POST of protobuf), and what an operator is told when
 * it fails: the reason, and what the answer suggests is wrong (a gRPC port, an HTTP/2 answer, a
 * wrong path, a refused key). The sender's log line and `check` say the same, from here; neither
 * ever shows the headers.
 */
import type { Dispatcher } from 'undici';
import { networkFailureReason } from '../../net/failure-reason.js';

/** The longest an export may take, answer included, before its spans are dropped. */
export const EXPORT_TIMEOUT_MS = 10_000;

/** How one export went: the collector's status, or the error that ended it. */
export type ExportOutcome =
  { readonly ok: true; readonly status: number } | { readonly ok: false; readonly status?: number; readonly error?: unknown };

/** POSTs `body` to the collector's traces URL; never rejects. */
export async function postExport(
  url: URL,
  headers: Readonly<Record<string, string>>,
  dispatcher: Dispatcher,
  body: Uint8Array,
): Promise<ExportOutcome> {
  try {
    const answer = await dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-protobuf' },
      body,
      headersTimeout: EXPORT_TIMEOUT_MS,
      bodyTimeout: EXPORT_TIMEOUT_MS,
      signal: AbortSignal.timeout(EXPORT_TIMEOUT_MS),
    });
    await answer.body.dump({ limit: 64 * 1024 });
    const status = answer.statusCode;
    return status >= 200 && status <= 299 ? { ok: true, status } : { ok: false, status };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The OpenTelemetry Collector's OTLP/gRPC port; OTLP over HTTP is its 4318. */
const GRPC_PORT = '4317';

/** The setting that holds the collector's URL (the same words for both). */
const ENDPOINT = 'OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)';

/**
 * True when the answer that undici's HTTP/1.1 parser refused began with an HTTP/2 frame header
 * whose type is SETTINGS (RFC 9113 §4.1, §6.5): what an HTTP/2-only server, such as a gRPC port,
 * sends first.
 */
function answeredHttp2(error: unknown): boolean {
  const data = (error as { name?: string; data?: unknown }).data;
  return (error as Error).name === 'HTTPParserError' && typeof data === 'string' && data.length >= 9 && data.charCodeAt(3) === 0x04;
}

/** What port 4317 is, said when a failed export went there. */
const GRPC_PORT_HINT =
  `port ${GRPC_PORT} is the OpenTelemetry Collector's OTLP/gRPC port: the proxy sends OTLP over HTTP, which the collector ` +
  `takes on port 4318 (${ENDPOINT}=http://<collector>:4318)`;

/** Hints joined in one clause; undefined when there is none. */
const hints = (...said: (string | undefined)[]): string | undefined => said.filter((h) => h !== undefined).join('; ') || undefined;

/**
 * A failed export in a few words, and what to change when the answer points at a likely mistake:
 * a gRPC port, an HTTP/2 answer, a path with no receiver, a refused key, nothing listening.
 */
export function exportFailure(url: URL, outcome: ExportOutcome & { ok: false }): { reason: string; hint: string | undefined } {
  const grpc = url.port === GRPC_PORT ? GRPC_PORT_HINT : undefined;
  const status = outcome.status;
  if (status !== undefined) {
    const reason = `the collector answered ${status}`;
    if (status === 404 || status === 405) {
      const path =
        `no OTLP/HTTP traces receiver at ${url.origin}${url.pathname}: OTEL_EXPORTER_OTLP_ENDPOINT is the collector's base URL, ` +
        'to which /v1/traces is added; OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as given';
      return { reason, hint: hints(path, grpc) };
    }
    if (status === 401 || status === 403) {
      return { reason, hint: hints('the collector refused the request: is the key in OTEL_EXPORTER_OTLP_HEADERS right?', grpc) };
    }
    return { reason, hint: grpc };
  }
  const error = outcome.error;
  if (answeredHttp2(error)) {
    return {
      reason: 'the collector answered in HTTP/2, not HTTP/1.1',
      hint: hints(
        `an HTTP/2-only port, such as OTLP/gRPC's ${GRPC_PORT}, answers so; the proxy sends OTLP over HTTP/1.1: point ` +
          `${ENDPOINT} at the collector's OTLP/HTTP port, 4318 by default`,
      ),
    };
  }
  if ((error as Error | undefined)?.name === 'HTTPParserError') {
    return {
      reason: 'the answer was not HTTP/1.1',
      hint: hints(grpc ?? `is ${ENDPOINT} the collector's OTLP/HTTP port (4318 by default), with the port's scheme (http or https)?`),
    };
  }
  if (
    (error as Error | undefined)?.name === 'TimeoutError' ||
    (error as { code?: string } | undefined)?.code === 'UND_ERR_HEADERS_TIMEOUT'
  ) {
    return { reason: `no answer within ${EXPORT_TIMEOUT_MS / 1000} s`, hint: grpc };
  }
  const reason = networkFailureReason(error, url.protocol === 'https:');
  if (reason === 'ECONNREFUSED')
    return { reason, hint: hints(`nothing listens at ${url.origin}: is ${ENDPOINT} right, and the collector up?`, grpc) };
  return { reason, hint: grpc };
}
