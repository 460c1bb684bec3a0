/**
 * A real OTLP/HTTP receiver for the tests: it decodes each export with the OpenTelemetry project's
 * own protobuf definitions (test/fixtures/opentelemetry-proto) and keeps the spans; it can also
 * hang or refuse, as a collector that is slow or down does.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import protobuf from 'protobufjs';

const PROTO_ROOT = join(import.meta.dirname, '..', 'fixtures', 'opentelemetry-proto');

/** One span as received, ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  traceState: string;
  /** Nanoseconds since the epoch, in decimal. */
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  flags: number;
  /** `Status.code`: 0 unset, 2 error. */
  statusCode: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string; flags: number }[];
  /** The resource's attributes. */
  resource: Record<string, string | number | boolean>;
  /** The instrumentation scope's name. */
  scope: string;
}

export type ReceiverMode = 'accept' | 'hang' | 'refuse';

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT names it. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Every export's raw body and headers. */
  readonly exports: { path: string; headers: IncomingMessage['headers']; body: Buffer }[];
  setMode(mode: ReceiverMode): void;
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
type KeyValue = { key: string; value?: AnyValue };

const plain = (attributes: KeyValue[] | undefined): Record<string, string | number | boolean> =>
  Object.fromEntries(
    (attributes ?? []).map(({ key, value }) => [
      key,
      value?.stringValue ?? (value?.intValue !== undefined ? Number(value.intValue) : (value?.boolValue ?? value?.doubleValue ?? '')),
    ]),
  );
const hex = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? []).toString('hex');

interface Decoded {
  resourceSpans: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans: {
      scope?: { name: string };
      spans: {
        name: string;
        kind: number;
        traceId: Uint8Array;
        spanId: Uint8Array;
        parentSpanId: Uint8Array;
        traceState: string;
        startTimeUnixNano: string;
        endTimeUnixNano: string;
        flags: number;
        status?: { code: number };
        attributes: KeyValue[];
        links: { traceId: Uint8Array; spanId: Uint8Array; flags: number }[];
      }[];
    }[];
  }[];
}

/** The OpenTelemetry project's message types, loaded from its protobuf definitions. */
async function loadTypes(): Promise<{ request: protobuf.Type; response: protobuf.Type }> {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_ROOT, target);
  await root.load('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  return {
    request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
  };
}

/** A decoder of `ExportTraceServiceRequest` bodies into their spans, as a collector reads them. */
export async function otlpDecoder(): Promise<(body: Uint8Array) => ReceivedSpan[]> {
  const { request } = await loadTypes();
  return (body) => {
    const decoded = request.toObject(request.decode(body), { longs: String, defaults: true }) as Decoded;
    const spans: ReceivedSpan[] = [];
    for (const rs of decoded.resourceSpans) {
      for (const ss of rs.scopeSpans) {
        for (const s of ss.spans) {
          spans.push({
            name: s.name,
            kind: s.kind,
            traceId: hex(s.traceId),
            spanId: hex(s.spanId),
            parentSpanId: hex(s.parentSpanId),
            traceState: s.traceState,
            startTimeUnixNano: s.startTimeUnixNano,
            endTimeUnixNano: s.endTimeUnixNano,
            flags: s.flags,
            statusCode: s.status?.code ?? 0,
            attributes: plain(s.attributes),
            links: s.links.map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId), flags: l.flags })),
            resource: plain(rs.resource?.attributes),
            scope: ss.scope?.name ?? '',
          });
        }
      }
    }
    return spans;
  };
}

/** Starts a receiver on a loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const { response } = await loadTypes();
  const decode = await otlpDecoder();
  const spans: ReceivedSpan[] = [];
  const exports: OtlpReceiver['exports'] = [];
  let mode: ReceiverMode = 'accept';
  const hung = new Set<ServerResponse>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      exports.push({ path: req.url!, headers: req.headers, body });
      if (mode === 'hang') return void hung.add(res);
      if (mode === 'refuse') {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('unavailable');
        return;
      }
      spans.push(...decode(body));
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(response.encode(response.create({})).finish()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    exports,
    setMode(next) {
      mode = next;
    },
    async close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
