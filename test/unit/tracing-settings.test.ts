import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../../src/core/errors.js';
import type { TracingSettings } from '../../src/telemetry/tracing/index.js';
import { loadSettings } from '../helpers/load-settings.js';

const BASE = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'client-secret' };
const API_KEY = 'collector-key-4hq8';

function tracing(env: Record<string, string>, file?: string): TracingSettings | undefined {
  return loadSettings({
    env: { ...BASE, ...env },
    readFile: () => '',
    ...(file === undefined ? {} : { file: { path: '/etc/ticket-auth-proxy.yaml', values: parseYaml(file) as unknown } }),
  }).checked.tracing;
}

function problems(env: Record<string, string>, file?: string): string[] {
  try {
    tracing(env, file);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error('expected a ConfigError, the configuration loaded');
}

describe('the tracing settings', () => {
  it('are off without a collector, and off with OTEL_SDK_DISABLED=true even with one', () => {
    expect(tracing({})).toBeUndefined();
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });

  it('send to /v1/traces under OTEL_EXPORTER_OTLP_ENDPOINT, or to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given', () => {
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.internal:4318' })?.url.href).toBe(
      'http://collector.internal:4318/v1/traces',
    );
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com/otlp/' })?.url.href).toBe(
      'https://otel.example.com/otlp/v1/traces',
    );
    expect(
      tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b.example.com/traces' })?.url
        .href,
    ).toBe('https://b.example.com/traces');
  });

  it('sample 1 in 100 new traces by default, following a caller that sampled, as ticket-auth-proxy', () => {
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toMatchObject({
      sampler: 'parentbased_traceidratio',
      ratio: 0.01,
      serviceName: 'ticket-auth-proxy',
      headers: {},
      resourceAttributes: {},
    });
  });

  it('read the headers and the resource attributes as key=value pairs, percent-decoded', () => {
    expect(
      tracing({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com',
        OTEL_EXPORTER_OTLP_HEADERS: `api-key=${API_KEY},x-tenant=a%20b`,
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,k8s.namespace.name=tickets',
      }),
    ).toMatchObject({
      headers: { 'api-key': API_KEY, 'x-tenant': 'a b' },
      resourceAttributes: { 'deployment.environment': 'prod', 'k8s.namespace.name': 'tickets' },
    });
  });

  it('refuse a protocol other than http/protobuf, saying so', () => {
    expect(problems({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toEqual([
      'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf (got "grpc"): the proxy exports OTLP over HTTP with protobuf only, ' +
        "to a collector's port 4318",
    ]);
  });

  it('refuse to send the headers in the clear to a collector off loopback, unless ALLOW_INSECURE_HTTP=true, never showing them', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.internal:4318', OTEL_EXPORTER_OTLP_HEADERS: `api-key=${API_KEY}` };
    const refused = problems(env);
    expect(refused).toEqual([
      'OTEL_EXPORTER_OTLP_HEADERS would be sent in the clear to collector.internal:4318 (OTEL_EXPORTER_OTLP_ENDPOINT is http): ' +
        'use an https collector, a loopback one, or set ALLOW_INSECURE_HTTP=true',
    ]);
    expect(tracing({ ...env, ALLOW_INSECURE_HTTP: 'true' })?.headers).toEqual({ 'api-key': API_KEY });
    expect(tracing({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })?.headers).toEqual({ 'api-key': API_KEY });
    // An http collector without headers is allowed: in-cluster collectors usually are.
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.internal:4318' })).toBeDefined();
  });

  it('refuse malformed headers, an endpoint that is no http URL, and a ratio outside 0 to 1, never showing a header', () => {
    const refused = problems({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://user:pw@collector/x',
      OTEL_EXPORTER_OTLP_HEADERS: `${API_KEY}`,
      OTEL_TRACES_SAMPLER_ARG: '2',
    });
    expect(refused).toEqual([
      'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "2")',
      'OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs separated by commas, values percent-encoded',
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http or https URL without credentials, such as http://otel-collector:4318 (got "ftp://***@collector/x")',
    ]);
    expect(refused.join('\n')).not.toContain(API_KEY);
    expect(refused.join('\n')).not.toContain('pw');
  });

  it('never show the key of an endpoint written without a scheme, which reads as one', () => {
    for (const endpoint of ['user:s3cret@collector:4318', 'user:s3cret@collector :4318']) {
      const refused = problems({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
      expect(refused.join('\n')).toContain('OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http or https URL');
      expect(refused.join('\n')).not.toContain('s3cret');
    }
  });

  it('are read from the file under tracing, and its messages name the key as the file writes it', () => {
    const file = ['tracing:', '  endpoint: http://127.0.0.1:4318', '  sampler: always_on', '  serviceName: tickets-proxy'].join('\n');
    expect(tracing({}, file)).toMatchObject({
      url: new URL('http://127.0.0.1:4318/v1/traces'),
      sampler: 'always_on',
      serviceName: 'tickets-proxy',
    });
    expect(problems({}, ['tracing:', '  endpoint: http://127.0.0.1:4318', '  protocol: grpc'].join('\n'))[0]).toMatch(
      /^tracing\.protocol in \S+ \(OTEL_EXPORTER_OTLP_PROTOCOL\) must be http\/protobuf/,
    );
    expect(problems({}, ['tracing:', '  endpont: http://127.0.0.1:4318'].join('\n'))[0]).toMatch(
      /^tracing\.endpont in \S+ is not a setting/,
    );
  });
});
