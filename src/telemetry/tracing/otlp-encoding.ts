/**
 * The OTLP protobuf encoding of the proxy's spans: an `ExportTraceServiceRequest` as
 * opentelemetry-proto's `collector/trace/v1/trace_service.proto` and `trace/v1/trace.proto`
 * define it, written in one pass into a buffer of the exact size, with the resource, the scope and
 * each kind of span's fixed attributes encoded once. Written here rather than by OpenTelemetry's
 * serializer (`ProtobufTraceSerializer` of @opentelemetry/otlp-transformer 0.301), which takes the
 * SDK's span objects and encodes every attribute of every span afresh: with the proxy's two spans
 * of a request, in batches of 512, it took 1.7 µs a span where this takes 0.25 µs, about 6 % of a
 * request's CPU at get-1k against 1 % (docs/performance.md, "Tracing").
 */
import { PARENT_ID, SPAN_ID, TRACE_ID } from './ids.js';
import type { SpanLink, SpanRecord, SpanShape } from './span-record.js';

// Wire types (protobuf encoding: https://protobuf.dev/programming-guides/encoding/).
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

/** A field's tag: every field here is numbered below 16 but `Span.flags` (16). */
const tag = (field: number, wire: number): number => (field << 3) | wire;

const TWO_32 = 2 ** 32;

/** Bytes a varint of `n` (0 ≤ n < 2^35) takes. */
function varintSize(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

/** A length-delimited field's size: its one-byte tag, its length, its bytes. */
const lenFieldSize = (length: number): number => 1 + varintSize(length) + length;

/** Writes into a buffer sized for what is written. */
class Writer {
  at = 0;
  constructor(
    readonly buf: Buffer,
    /** The epoch time of `performance.now()`'s zero in nanoseconds, as 32-bit halves: {@link fixed64Time} adds it. */
    private readonly originHigh = 0,
    private readonly originLow = 0,
  ) {}

  byte(b: number): void {
    this.buf[this.at++] = b;
  }

  varint(n: number): void {
    while (n >= 0x80) {
      this.buf[this.at++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.at++] = n;
  }

  bytes(b: Uint8Array): void {
    // A span's pieces are short: a loop costs less than a typed array's set() at these lengths.
    if (b.length > 64) this.buf.set(b, this.at);
    else for (let i = 0; i < b.length; i++) this.buf[this.at + i] = b[i]!;
    this.at += b.length;
  }

  /** A length-delimited field of an id's `length` bytes, at `from` in `ids` (a loop: ids are 8 or 16 bytes). */
  idField(field: number, ids: Uint8Array, from: number, length: number): void {
    const buf = this.buf;
    let at = this.at;
    buf[at++] = tag(field, LEN);
    buf[at++] = length;
    for (let i = from; i < from + length; i++) buf[at++] = ids[i]!;
    this.at = at;
  }

  /** A length-delimited field of a string's UTF-8 bytes, `size` of them. */
  stringField(field: number, text: string, size: number): void {
    this.byte(tag(field, LEN));
    this.varint(size);
    this.at += this.buf.write(text, this.at, 'utf8');
  }

  /** Four bytes, little-endian, of `n` (below 2^32). */
  fixed32(n: number): void {
    const buf = this.buf;
    const at = this.at;
    buf[at] = n;
    buf[at + 1] = n >>> 8;
    buf[at + 2] = n >>> 16;
    buf[at + 3] = n >>> 24;
    this.at = at + 4;
  }

  /**
   * A time read from `performance.now()` as fixed64 nanoseconds since the epoch. Those pass 2^53,
   * so the time since the origin (exact for 104 days, then to a few nanoseconds) is added to the
   * origin in 32-bit halves.
   */
  fixed64Time(ms: number): void {
    const ns = Math.round(ms * 1e6);
    const high = Math.floor(ns / TWO_32);
    const low = ns - high * TWO_32 + this.originLow;
    const carry = low >= TWO_32 ? 1 : 0;
    this.fixed32(low - carry * TWO_32);
    this.fixed32(high + this.originHigh + carry);
  }
}

/** An attribute's value, as the proxy's spans have them. */
export type AttributeValue = string | number;

/** `KeyValue{ key, value: AnyValue{ string_value | int_value } }`, its size without a field tag. */
function keyValueSize(keySize: number, value: AttributeValue, valueSize: number): number {
  const any = typeof value === 'number' ? 1 + varintSize(value) : lenFieldSize(valueSize);
  return lenFieldSize(keySize) + lenFieldSize(any);
}

/** Writes `KeyValue` fields numbered `field` (the caller sizes the buffer). */
function writeKeyValue(w: Writer, field: number, key: string, value: AttributeValue): void {
  const keySize = Buffer.byteLength(key);
  const valueSize = typeof value === 'number' ? 0 : Buffer.byteLength(value);
  w.byte(tag(field, LEN));
  w.varint(keyValueSize(keySize, value, valueSize));
  w.stringField(1, key, keySize);
  w.byte(tag(2, LEN));
  if (typeof value === 'number') {
    w.varint(1 + varintSize(value));
    w.byte(tag(3, VARINT));
    w.varint(value);
  } else {
    w.varint(lenFieldSize(valueSize));
    w.stringField(1, value, valueSize);
  }
}

/** The size of a `KeyValue` field, its tag included. */
function keyValueFieldSize(key: string, value: AttributeValue): number {
  return lenFieldSize(keyValueSize(Buffer.byteLength(key), value, typeof value === 'number' ? 0 : Buffer.byteLength(value)));
}

/**
 * Attributes as `KeyValue` fields numbered `field`, encoded once: a span's fixed attributes
 * (field 9 of `Span`), a resource's (field 1 of `Resource`). Integers must be whole and at least 0.
 */
export function encodeAttributes(attributes: Readonly<Record<string, AttributeValue>>, field = 9): Buffer {
  let size = 0;
  for (const key in attributes) size += keyValueFieldSize(key, attributes[key]!);
  const w = new Writer(Buffer.allocUnsafe(size));
  for (const key in attributes) writeKeyValue(w, field, key, attributes[key]!);
  return w.buf;
}

/** A span's name and fixed attributes, encoded once. */
export function spanShape(name: string, attributes: Readonly<Record<string, AttributeValue>>): SpanShape {
  return { name: Buffer.from(name), attributes: encodeAttributes(attributes) };
}

/** The part of an export that is the same for every span: the resource, the instrumentation scope, the clock's origin. */
export interface ExportHead {
  /** `ResourceSpans.resource` with its tag. */
  readonly resource: Buffer;
  /** `ScopeSpans.scope` with its tag. */
  readonly scope: Buffer;
  /** `performance.timeOrigin` in nanoseconds since the epoch, as 32-bit halves. */
  readonly originHigh: number;
  readonly originLow: number;
}

/**
 * Encodes the resource's attributes and the scope's name once; `timeOrigin` is the epoch time in
 * milliseconds of the zero of the spans' times (`performance.timeOrigin`).
 */
export function exportHead(resourceAttributes: Readonly<Record<string, string>>, scopeName: string, timeOrigin: number): ExportHead {
  const attributes = encodeAttributes(resourceAttributes, 1);
  const resource = new Writer(Buffer.allocUnsafe(lenFieldSize(attributes.length)));
  resource.byte(tag(1, LEN));
  resource.varint(attributes.length);
  resource.bytes(attributes);
  const nameSize = Buffer.byteLength(scopeName);
  const scope = new Writer(Buffer.allocUnsafe(lenFieldSize(lenFieldSize(nameSize))));
  scope.byte(tag(1, LEN));
  scope.varint(lenFieldSize(nameSize));
  scope.stringField(1, scopeName, nameSize);
  const origin = BigInt(Math.round(timeOrigin * 1e6));
  return { resource: resource.buf, scope: scope.buf, originHigh: Number(origin >> 32n), originLow: Number(origin & 0xffffffffn) };
}

// The attributes that vary. A status code and a resend count take few values: each is encoded
// once, when first seen.
const STATUS_CODE = 'http.response.status_code';
const RESEND_COUNT = 'http.request.resend_count';
const ERROR_TYPE = 'error.type';
const statusAttributes: Buffer[] = [];
const resendAttributes: Buffer[] = [];

/** `attribute` = `n` as a `KeyValue` field, from `cache` when `n` is below `limit`. */
function intAttribute(cache: Buffer[], limit: number, attribute: string, n: number): Buffer {
  if (n >= limit) return encodeAttributes({ [attribute]: n });
  return (cache[n] ??= encodeAttributes({ [attribute]: n }));
}
const statusAttribute = (status: number): Buffer => intAttribute(statusAttributes, 1000, STATUS_CODE, status);
const resendAttribute = (count: number): Buffer => intAttribute(resendAttributes, 16, RESEND_COUNT, count);

/** `Span.flags`: the W3C trace flags (sampled), and whether the parent was remote, known. */
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;
const flagsOf = (sampled: boolean, remote: boolean): number => (sampled ? 1 : 0) | HAS_IS_REMOTE | (remote ? IS_REMOTE : 0);

/** `Span.Link{ trace_id, span_id, flags }`: its size without a field tag. */
const LINK_SIZE = lenFieldSize(16) + lenFieldSize(8) + 1 + 4;
/** `Status{ code: STATUS_CODE_ERROR }`. */
const ERROR_STATUS = Buffer.from([tag(15, LEN), 2, tag(3, VARINT), 2]);

/** The size of a span's message, without its field tag and length. */
function spanSize(span: SpanRecord): number {
  const { shape } = span;
  let size = lenFieldSize(16) + lenFieldSize(8) + lenFieldSize(shape.name.length) + 2 + 9 + 9 + shape.attributes.length + 2 + 4;
  if (span.traceState !== '') size += lenFieldSize(Buffer.byteLength(span.traceState));
  if (span.hasParent) size += lenFieldSize(8);
  if (span.status > 0) size += statusAttribute(span.status).length;
  if (span.resendCount > 0) size += resendAttribute(span.resendCount).length;
  if (span.errorType !== undefined) size += keyValueFieldSize(ERROR_TYPE, span.errorType);
  if (span.links !== undefined) size += span.links.length * lenFieldSize(LINK_SIZE);
  if (span.failed) size += ERROR_STATUS.length;
  return size;
}

function writeLink(w: Writer, link: SpanLink): void {
  w.byte(tag(13, LEN));
  w.varint(LINK_SIZE);
  w.idField(1, link.ids, link.at + TRACE_ID, 16);
  w.idField(2, link.ids, link.at + SPAN_ID, 8);
  w.byte(tag(6, I32));
  w.fixed32(flagsOf(link.sampled, false));
}

function writeSpan(w: Writer, span: SpanRecord): void {
  w.idField(1, span.ids, span.at + TRACE_ID, 16);
  w.idField(2, span.ids, span.at + SPAN_ID, 8);
  if (span.traceState !== '') w.stringField(3, span.traceState, Buffer.byteLength(span.traceState));
  if (span.hasParent) w.idField(4, span.ids, span.at + PARENT_ID, 8);
  w.byte(tag(5, LEN));
  w.varint(span.shape.name.length);
  w.bytes(span.shape.name);
  w.byte(tag(6, VARINT));
  w.byte(span.kind);
  w.byte(tag(7, I64));
  w.fixed64Time(span.start);
  w.byte(tag(8, I64));
  w.fixed64Time(span.end);
  w.bytes(span.shape.attributes);
  if (span.status > 0) w.bytes(statusAttribute(span.status));
  if (span.resendCount > 0) w.bytes(resendAttribute(span.resendCount));
  if (span.errorType !== undefined) writeKeyValue(w, 9, ERROR_TYPE, span.errorType);
  if (span.links !== undefined) for (const link of span.links) writeLink(w, link);
  if (span.failed) w.bytes(ERROR_STATUS);
  // Field 16: a two-byte tag.
  w.byte(0x80 | (tag(16, I32) & 0x7f));
  w.byte(tag(16, I32) >>> 7);
  w.fixed32(flagsOf(true, span.remoteParent));
}

/**
 * One `ExportTraceServiceRequest` of `spans` (all sampled and ended): one `ResourceSpans` with one
 * `ScopeSpans`. An empty list is the empty message, a valid export of nothing.
 */
export function encodeExport(head: ExportHead, spans: readonly SpanRecord[]): Buffer {
  if (spans.length === 0) return Buffer.alloc(0);
  const sizes = new Array<number>(spans.length);
  let scopeSpans = head.scope.length;
  for (let i = 0; i < spans.length; i++) {
    const size = spanSize(spans[i]!);
    sizes[i] = size;
    scopeSpans += lenFieldSize(size);
  }
  const resourceSpans = head.resource.length + lenFieldSize(scopeSpans);
  const w = new Writer(Buffer.allocUnsafe(lenFieldSize(resourceSpans)), head.originHigh, head.originLow);
  w.byte(tag(1, LEN));
  w.varint(resourceSpans);
  w.bytes(head.resource);
  w.byte(tag(2, LEN));
  w.varint(scopeSpans);
  w.bytes(head.scope);
  for (let i = 0; i < spans.length; i++) {
    w.byte(tag(2, LEN));
    w.varint(sizes[i]!);
    writeSpan(w, spans[i]!);
  }
  return w.buf;
}
