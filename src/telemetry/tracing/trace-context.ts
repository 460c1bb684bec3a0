/**
 * The W3C Trace Context headers (https://www.w3.org/TR/trace-context/) of a request: the caller's
 * `traceparent` read, and the proxy's own put in its place. With tracing on, the gateway gets one
 * `traceparent`, the proxy's: every one the caller sent is removed, and its `tracestate` with them
 * when the caller's parent was not valid (a malformed `traceparent`, or several): a vendor that
 * cannot parse `traceparent` must not parse `tracestate` either, and the trace it starts has none
 * (W3C Trace Context, "Processing Model").
 */
import type { RemoteParent } from './sampler.js';

const TRACEPARENT = 'traceparent';
const TRACESTATE = 'tracestate';

/**
 * version-traceid-parentid-flags, lower-case hex; a later version may add fields after a dash
 * (W3C Trace Context, "Versioning of traceparent").
 */
const FORMAT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The longest caller `tracestate` kept on the proxy's spans: what a vendor should pass on at least
 * (W3C Trace Context, "tracestate Limits"). The header itself goes on as sent.
 */
const SPAN_TRACESTATE_MAX = 512;

/** A `traceparent` value's parent, or undefined when it is not valid (W3C Trace Context, "traceparent Header"). */
export function parseTraceparent(value: string): RemoteParent | undefined {
  const m = FORMAT.exec(value);
  if (m === null) return undefined;
  const [, version, traceId, spanId, flags, more] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && more !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** What the caller sent of a trace context. */
export interface CallerTrace {
  /** Its parent, when it sent exactly one valid `traceparent`. */
  readonly parent: RemoteParent | undefined;
  /** Its `tracestate`, for the proxy's spans: with a valid parent, up to 512 characters; else ''. */
  readonly traceState: string;
}

const isNamed = (name: string, lower: string): boolean => name.length === lower.length && name.toLowerCase() === lower;

/** Reads a request's raw header list; undefined when it carries no `traceparent` (most requests). */
export function readCallerTrace(raw: readonly string[]): CallerTrace | undefined {
  let value: string | undefined;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (isNamed(raw[i]!, TRACEPARENT)) {
      value = raw[i + 1];
      count += 1;
    }
  }
  if (count === 0) return undefined;
  // Several traceparent fields are no one valid value (their combined value does not parse): the trace restarts.
  const parent = count === 1 ? parseTraceparent(value!) : undefined;
  if (parent === undefined) return { parent, traceState: '' };
  let state = '';
  for (let i = 0; i < raw.length; i += 2) if (isNamed(raw[i]!, TRACESTATE)) state = state === '' ? raw[i + 1]! : `${state},${raw[i + 1]!}`;
  return { parent, traceState: state.length <= SPAN_TRACESTATE_MAX ? state : '' };
}

/**
 * Removes from a flat header list every `traceparent`, and every `tracestate` too when `withState`,
 * keeping the order of the rest (the proxy's `Authorization` stays last).
 */
export function removeCallerTrace(headers: string[], withState: boolean): void {
  let kept = 0;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (isNamed(name, TRACEPARENT) || (withState && isNamed(name, TRACESTATE))) continue;
    headers[kept] = name;
    headers[kept + 1] = headers[i + 1]!;
    kept += 2;
  }
  headers.length = kept;
}

/**
 * Sets the proxy's `traceparent` in a flat header list: at `at`, where an earlier attempt put it,
 * else wherever it is now, else first (the proxy's own headers are at the end). Returns where it is.
 */
export function putTraceparent(headers: string[], value: string, at: number): number {
  if (at < 0 || headers[at] !== TRACEPARENT) {
    at = -1;
    for (let i = 0; i < headers.length && at < 0; i += 2) if (headers[i] === TRACEPARENT) at = i;
  }
  if (at < 0) {
    headers.unshift(TRACEPARENT, value);
    return 0;
  }
  headers[at + 1] = value;
  return at;
}
