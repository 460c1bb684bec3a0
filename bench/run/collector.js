// The OpenTelemetry collector of the tracing scenario: an OTLP/HTTP receiver on loopback, in the
// bench's own process, that answers every export 200 with an empty ExportTraceServiceResponse, as
// a collector that keeps up does, and counts the exports, their bytes and the spans in them (read
// from the protobuf's framing, not decoded), so the report can say whether every request the
// product forwarded was traced: `{ url, counts(), stop() }`.
import { createServer } from 'node:http';

/** Reads a protobuf varint at `at`: `[value, next]` (values here stay far below 2^53). */
function varint(buf, at) {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = buf[at++];
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, at];
    scale *= 128;
  }
}

/**
 * Calls `each(start, end)` for every length-delimited field numbered `field` of the message in
 * `buf[start, end)`, skipping the rest (wire types 0, 1, 2 and 5, all OTLP uses).
 */
function fields(buf, start, end, field, each) {
  let at = start;
  while (at < end) {
    let key;
    [key, at] = varint(buf, at);
    const type = key & 7;
    if (type === 0) [, at] = varint(buf, at);
    else if (type === 1) at += 8;
    else if (type === 5) at += 4;
    else if (type === 2) {
      let length;
      [length, at] = varint(buf, at);
      if (key >>> 3 === field) each(at, at + length);
      at += length;
    } else throw new Error(`wire type ${type} is not OTLP's`);
  }
}

/**
 * The spans of an ExportTraceServiceRequest: its resource_spans (1), their scope_spans (2), their
 * spans (2), as opentelemetry-proto's trace.proto numbers them.
 */
export function countSpans(buf) {
  let spans = 0;
  fields(buf, 0, buf.length, 1, (rs, rsEnd) => fields(buf, rs, rsEnd, 2, (ss, ssEnd) => fields(buf, ss, ssEnd, 2, () => spans++)));
  return spans;
}

/** Starts the collector on a loopback port. */
export async function startCollector() {
  const counts = { exports: 0, bytes: 0, spans: 0, malformed: 0 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      counts.exports += 1;
      counts.bytes += body.length;
      try {
        counts.spans += countSpans(body);
      } catch {
        counts.malformed += 1;
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 }).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    counts: () => ({ ...counts }),
    stop: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
