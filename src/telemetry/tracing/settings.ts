import type { SettingsCheckContext } from '../../config/load.js';
import type { TracesSampler } from '../../config/tracing.js';
import { isLoopbackHost } from '../../core/hosts.js';
import { withoutUserinfo } from '../../core/redact.js';

/** Tracing as the settings describe it, once checked; undefined when tracing is off. */
export interface TracingSettings {
  /** Where spans are sent: the collector's traces URL. */
  readonly url: URL;
  /** Sent with every export (a collector's API key): never logged. */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: TracesSampler;
  readonly ratio: number;
}

/**
 * `key=value,...` pairs as the OpenTelemetry specification writes `OTEL_EXPORTER_OTLP_HEADERS` and
 * `OTEL_RESOURCE_ATTRIBUTES`: values percent-encoded. Undefined when a pair is malformed.
 */
export function parsePairs(text: string): Record<string, string> | undefined {
  const pairs: Record<string, string> = {};
  for (const part of text.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) return undefined;
    try {
      pairs[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return pairs;
}

/**
 * Checks the tracing settings (docs/configuration.md, "Traces"): tracing is on when a collector
 * is named and `OTEL_SDK_DISABLED` is not true; the protocol is OTLP over HTTP with protobuf; an
 * `http:` collector receives the headers (an API key) only on loopback unless
 * `ALLOW_INSECURE_HTTP=true`. Problems name the setting and never show the headers.
 */
export function checkTracingSettings(ctx: SettingsCheckContext): TracingSettings | undefined {
  const { config } = ctx;
  if (config.tracingProtocol !== 'http/protobuf') {
    ctx.problem(
      `${ctx.name('tracingProtocol')} must be http/protobuf (got ${JSON.stringify(config.tracingProtocol)}): ` +
        "the proxy exports OTLP over HTTP with protobuf only, to a collector's port 4318",
    );
  }
  const headers = config.tracingHeaders === undefined ? {} : parsePairs(config.tracingHeaders);
  if (headers === undefined) {
    ctx.problem(`${ctx.name('tracingHeaders')} must be key=value pairs separated by commas, values percent-encoded`);
  }
  const resourceAttributes = config.tracingResourceAttributes === undefined ? {} : parsePairs(config.tracingResourceAttributes);
  if (resourceAttributes === undefined) {
    ctx.problem(
      `${ctx.name('tracingResourceAttributes')} must be key=value pairs separated by commas, values percent-encoded ` +
        `(got ${JSON.stringify(config.tracingResourceAttributes)})`,
    );
  }
  const key = config.tracingTracesEndpoint !== undefined ? 'tracingTracesEndpoint' : 'tracingEndpoint';
  const given = config[key];
  if (given === undefined || config.tracingSdkDisabled) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(given);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '') {
    // Shown without credentials: a URL's user information may hold a collector's key, also where
    // the value is no URL (`user:key@collector:4318` reads as the scheme `user:`).
    const shown = JSON.stringify(withoutUserinfo(given));
    ctx.problem(
      `${ctx.name(key)} must be an absolute http or https URL without credentials, such as http://otel-collector:4318 (got ${shown})`,
    );
    return undefined;
  }
  if (key === 'tracingEndpoint') url = new URL(`${url.pathname.replace(/\/$/, '')}/v1/traces`, url);
  if (
    url.protocol === 'http:' &&
    headers !== undefined &&
    Object.keys(headers).length > 0 &&
    !config.allowInsecureHttp &&
    !isLoopbackHost(url.hostname)
  ) {
    ctx.problem(
      `${ctx.name('tracingHeaders')} would be sent in the clear to ${url.host} (${ctx.name(key)} is http): use an https collector, ` +
        'a loopback one, or set ALLOW_INSECURE_HTTP=true',
    );
  }
  return {
    url,
    headers: headers ?? {},
    serviceName: config.tracingServiceName,
    resourceAttributes: resourceAttributes ?? {},
    sampler: config.tracingSampler,
    ratio: config.tracingSamplerArg,
  };
}
