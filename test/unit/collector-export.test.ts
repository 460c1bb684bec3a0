import { describe, expect, it } from 'vitest';
import { exportFailure } from '../../src/telemetry/tracing/collector-export.js';

const url = (text: string): URL => new URL(text);
/** undici's error for an answer its HTTP/1.1 parser refused, `data` the bytes it read. */
const parserError = (data: string): Error =>
  Object.assign(new Error('Response does not match the HTTP/1.1 protocol'), { name: 'HTTPParserError', data });
const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

describe('what a failed export is said to be', () => {
  it('names the gRPC port, whatever else failed there', () => {
    const grpc = url('http://collector:4317/v1/traces');
    expect(exportFailure(grpc, { ok: false, error: refused }).hint).toContain(
      "port 4317 is the OpenTelemetry Collector's OTLP/gRPC port: the proxy sends OTLP over HTTP, which the collector takes on port 4318",
    );
    expect(exportFailure(grpc, { ok: false, error: parserError('garbage') }).hint).toContain('port 4317 is');
    expect(exportFailure(grpc, { ok: false, status: 502 }).hint).toContain('port 4317 is');
    expect(exportFailure(url('http://collector:4318/v1/traces'), { ok: false, status: 502 }).hint).toBeUndefined();
  });

  it('tells an HTTP/2 answer (a SETTINGS frame first) from other answers that are not HTTP/1.1', () => {
    const where = url('http://collector:9000/v1/traces');
    const h2 = exportFailure(where, { ok: false, error: parserError('\u0000\u0000\u0000\u0004\u0000\u0000\u0000\u0000\u0000') });
    expect(h2.reason).toBe('the collector answered in HTTP/2, not HTTP/1.1');
    expect(h2.hint).toContain("an HTTP/2-only port, such as OTLP/gRPC's 4317, answers so");
    const other = exportFailure(where, { ok: false, error: parserError('SSH-2.0-OpenSSH_9.2\r\n') });
    expect(other.reason).toBe('the answer was not HTTP/1.1');
    expect(other.hint).toContain("the collector's OTLP/HTTP port (4318 by default)");
  });

  it('points at the path for a 404, at the key for a 401 or 403, at the address when nothing listens', () => {
    const where = url('http://collector:4318/v1/traces');
    expect(exportFailure(where, { ok: false, status: 404 })).toEqual({
      reason: 'the collector answered 404',
      hint: expect.stringContaining("OTEL_EXPORTER_OTLP_ENDPOINT is the collector's base URL, to which /v1/traces is added") as string,
    });
    expect(exportFailure(where, { ok: false, status: 401 }).hint).toContain('OTEL_EXPORTER_OTLP_HEADERS');
    expect(exportFailure(where, { ok: false, error: refused })).toEqual({
      reason: 'ECONNREFUSED',
      hint: expect.stringContaining('nothing listens at http://collector:4318') as string,
    });
  });
});
