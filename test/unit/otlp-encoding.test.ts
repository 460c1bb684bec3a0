import { beforeAll, describe, expect, it } from 'vitest';
import { encodeExport, exportHead, spanShape } from '../../src/telemetry/tracing/otlp-encoding.js';
import { CLIENT, SERVER, SpanRecord } from '../../src/telemetry/tracing/span-record.js';
import { otlpDecoder, type ReceivedSpan } from '../helpers/otlp-receiver.js';

/** Decoded with the OpenTelemetry project's own protobuf definitions, as a collector reads an export. */
let decode: (body: Uint8Array) => ReceivedSpan[];
beforeAll(async () => {
  decode = await otlpDecoder();
});

/** An epoch time in milliseconds whose nanoseconds pass 2^53, as every time now does. */
const ORIGIN = 1_764_355_200_123.456;
const nanos = (ms: number): string => String(BigInt(Math.round(ORIGIN * 1e6)) + BigInt(Math.round(ms * 1e6)));

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

/** A span's ids as the tracer holds them: 32 bytes (trace, span, parent) at an offset of a block. */
function slot(trace: string, span: string, parent = '0'.repeat(16)): [Buffer, number] {
  const block = Buffer.alloc(40, 0xee);
  Buffer.from(trace + span + parent, 'hex').copy(block, 8);
  return [block, 8];
}
const link = (trace: string, span: string, sampled: boolean) => {
  const [ids, at] = slot(trace, span);
  return { ids, at, sampled };
};

describe('the OTLP encoding of the proxy spans', () => {
  it('writes every field a collector reads: ids, parent, names, kinds, times in nanoseconds, attributes, links, status, flags', () => {
    const head = exportHead({ 'service.name': 'ticket-auth-proxy', 'deployment.environment': 'prod' }, 'ticket-auth-proxy', ORIGIN);
    const server = new SpanRecord(
      ...slot(TRACE, '00f067aa0ba902b7', 'b7ad6b7169203331'),
      true,
      true,
      'vendor=opaque',
      SERVER,
      spanShape('GET /api/v1/*', { 'http.request.method': 'GET', 'http.route': '/api/v1/*' }),
      12.345678,
    );
    server.end = 15.5;
    server.status = 502;
    server.errorType = '502';
    server.failed = true;
    server.links = [link('a'.repeat(32), 'b'.repeat(16), true)];
    // A client span after 200 days: the time since the origin is past 2^53 nanoseconds.
    const late = 200 * 86_400_000 + 0.25;
    const client = new SpanRecord(
      ...slot(TRACE, '1111111111111111', '00f067aa0ba902b7'),
      true,
      false,
      '',
      CLIENT,
      spanShape('GET', { 'http.request.method': 'GET', 'server.port': 8443, 'ticket_auth_proxy.attempt': 'replay' }),
      late,
    );
    client.end = late + 1;
    client.status = 200;
    client.resendCount = 1;

    const [s, c] = decode(encodeExport(head, [server, client]));
    expect(s).toEqual({
      name: 'GET /api/v1/*',
      kind: SERVER,
      traceId: TRACE,
      spanId: '00f067aa0ba902b7',
      parentSpanId: 'b7ad6b7169203331',
      traceState: 'vendor=opaque',
      startTimeUnixNano: nanos(12.345678),
      endTimeUnixNano: nanos(15.5),
      flags: 0x301,
      statusCode: 2,
      attributes: { 'http.request.method': 'GET', 'http.route': '/api/v1/*', 'http.response.status_code': 502, 'error.type': '502' },
      links: [{ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), flags: 0x101 }],
      resource: { 'service.name': 'ticket-auth-proxy', 'deployment.environment': 'prod' },
      scope: 'ticket-auth-proxy',
    });
    expect(c).toMatchObject({
      name: 'GET',
      kind: CLIENT,
      parentSpanId: '00f067aa0ba902b7',
      traceState: '',
      startTimeUnixNano: nanos(late),
      endTimeUnixNano: nanos(late + 1),
      flags: 0x101,
      statusCode: 0,
      attributes: {
        'http.request.method': 'GET',
        'server.port': 8443,
        'ticket_auth_proxy.attempt': 'replay',
        'http.response.status_code': 200,
        'http.request.resend_count': 1,
      },
      links: [],
    });
  });

  it('sizes every length right: long and non-ASCII values, many links, a batch of hundreds of spans', () => {
    const long = 'é'.repeat(300);
    const head = exportHead({ 'service.name': long, [`k${'x'.repeat(200)}`]: 'v' }, 'ticket-auth-proxy', ORIGIN);
    const spans = Array.from({ length: 600 }, (_, i) => {
      const span = new SpanRecord(
        ...slot(TRACE, i.toString(16).padStart(16, '0')),
        false,
        false,
        '',
        CLIENT,
        spanShape(`token store ${long}`, { n: i }),
        i,
      );
      span.end = i + 1;
      span.errorType = i % 2 ? `TypeError ${long}` : undefined;
      span.links = Array.from({ length: i % 7 }, (_, j) => link(TRACE, j.toString(16).padStart(16, '0'), j % 2 === 0));
      return span;
    });
    const body = encodeExport(head, spans);
    const got = decode(body);
    expect(got).toHaveLength(600);
    expect(got[599]).toMatchObject({
      spanId: (599).toString(16).padStart(16, '0'),
      parentSpanId: '',
      name: `token store ${long}`,
      attributes: { n: 599, 'error.type': `TypeError ${long}` },
      resource: { 'service.name': long },
    });
    expect(got.map((s) => s.links.length)).toEqual(spans.map((s) => s.links!.length));
  });

  it('encodes no span as the empty message, a valid export of nothing', () => {
    const body = encodeExport(exportHead({ 'service.name': 's' }, 'ticket-auth-proxy', ORIGIN), []);
    expect(body.length).toBe(0);
    expect(decode(body)).toEqual([]);
  });
});
