/**
 * One span as the proxy records it: the few fields its fixed spans have, the attributes that never
 * change for a kind of span encoded once (otlp-encoding.ts), and the three that vary (a status
 * code, a resend count, an error type) as plain fields. No OpenTelemetry object is made on the
 * request path: the SDK's span carries a context, a clock, limits and attribute validation that
 * spans this few and this fixed do not need (docs/performance.md, "Tracing").
 */

/** OTLP's `Span.SpanKind`. */
export const SERVER = 2;
export const CLIENT = 3;
export type SpanKind = typeof SERVER | typeof CLIENT;

/** A link to another trace's span (the token fetch a request waited for): its ids, at `at` in `ids` (ids.ts). */
export interface SpanLink {
  readonly ids: Uint8Array;
  readonly at: number;
  readonly sampled: boolean;
}

/** A span's name and attributes that are fixed for its kind, encoded once (otlp-encoding.ts). */
export interface SpanShape {
  /** The name as UTF-8. */
  readonly name: Uint8Array;
  /** The fixed attributes as OTLP `KeyValue` fields of a `Span` (each with its field tag). */
  readonly attributes: Uint8Array;
}

/**
 * A sampled span: its ids in 32 bytes of `ids` from `at` (trace, span, parent: ids.ts), times in
 * milliseconds as `performance.now()` reads them.
 */
export class SpanRecord {
  /** `http.response.status_code`; 0 when there was no answer. */
  status = 0;
  /** `http.request.resend_count`; 0 is not exported. */
  resendCount = 0;
  /** `error.type`, when the span failed. */
  errorType: string | undefined = undefined;
  /** The span's status is ERROR. */
  failed = false;
  end = 0;
  links: SpanLink[] | undefined = undefined;

  constructor(
    readonly ids: Uint8Array,
    readonly at: number,
    /** Whether the span has a parent (else its parent bytes mean nothing). */
    readonly hasParent: boolean,
    /** Whether the parent came from the caller (a `traceparent`), as OTLP's span flags say. */
    readonly remoteParent: boolean,
    /** The caller's `tracestate` when its trace is continued and it is short enough to keep, else ''. */
    readonly traceState: string,
    readonly kind: SpanKind,
    readonly shape: SpanShape,
    readonly start: number,
  ) {}
}
