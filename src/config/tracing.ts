/**
 * The OpenTelemetry settings, under the variable names every OpenTelemetry SDK reads
 * (docs/configuration.md, "Traces"); their file keys sit under `tracing` (`tracing.endpoint` is
 * `tracingEndpoint`). Their syntax only: telemetry/tracing/settings.ts checks what they mean.
 */

/** The samplers `OTEL_TRACES_SAMPLER` names, as the OpenTelemetry specification lists them. */
export const TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** One of {@link TRACES_SAMPLERS}. */
export type TracesSampler = (typeof TRACES_SAMPLERS)[number];

/** The tracing settings, as the loader parses them. */
export interface TracingConfig {
  /** The collector's base URL; traces go to its `/v1/traces`. */
  readonly tracingEndpoint: string | undefined;
  /** The collector's traces URL, used as given; wins over `tracingEndpoint`. */
  readonly tracingTracesEndpoint: string | undefined;
  /** `key=value,...` headers sent to the collector: may carry an API key, so never shown. */
  readonly tracingHeaders: string | undefined;
  readonly tracingProtocol: string;
  readonly tracingServiceName: string;
  /** `key=value,...` resource attributes. */
  readonly tracingResourceAttributes: string | undefined;
  readonly tracingSampler: TracesSampler;
  readonly tracingSamplerArg: number;
  readonly tracingSdkDisabled: boolean;
}

/** The rows of the settings table (config.ts) for tracing, in its shape. */
export const TRACING_SETTINGS = [
  { env: 'OTEL_EXPORTER_OTLP_ENDPOINT', key: 'tracingEndpoint', kind: { type: 'url' } },
  { env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', key: 'tracingTracesEndpoint', kind: { type: 'url' } },
  { env: 'OTEL_EXPORTER_OTLP_HEADERS', key: 'tracingHeaders', kind: { type: 'string', secret: true } },
  { env: 'OTEL_EXPORTER_OTLP_PROTOCOL', key: 'tracingProtocol', kind: { type: 'string' }, default: 'http/protobuf' },
  { env: 'OTEL_SERVICE_NAME', key: 'tracingServiceName', kind: { type: 'string' }, default: 'ticket-auth-proxy' },
  { env: 'OTEL_RESOURCE_ATTRIBUTES', key: 'tracingResourceAttributes', kind: { type: 'string' } },
  {
    env: 'OTEL_TRACES_SAMPLER',
    key: 'tracingSampler',
    kind: { type: 'enum', values: TRACES_SAMPLERS },
    default: 'parentbased_traceidratio',
  },
  { env: 'OTEL_TRACES_SAMPLER_ARG', key: 'tracingSamplerArg', kind: { type: 'number', min: 0, max: 1 }, default: 0.01 },
  { env: 'OTEL_SDK_DISABLED', key: 'tracingSdkDisabled', kind: { type: 'bool' }, default: false },
] as const;

/** The groups of file keys: `tracing: { endpoint: ... }` is the file key `tracingEndpoint`. */
export const FILE_KEY_GROUPS: readonly string[] = ['tracing'];
