/**
 * The proxy's spans (docs/operations.md, "Traces"), made with the OpenTelemetry SDK, which this
 * module loads when tracing is on and only then (index.ts imports it on demand): a server span per
 * forwarded request, a client span per attempt to the gateway, a span per token fetch linked from
 * the requests that waited for it, a span per token store operation. No attribute holds a path, a
 * query, a token, a header value or a client id.
 */
import type { Context, Link, Span, Tracer } from '@opentelemetry/api';
import type { Sampler } from '@opentelemetry/sdk-trace';
import type { Dispatcher } from 'undici';
import type { Log } from '../../core/log.js';
import type { AttemptKind, RequestTrace, RequestTracer } from '../../proxy/recorder.js';
import type { StoreOperation, StoreResult } from '../../store/index.js';
import type { FetchOutcome } from '../../token/errors.js';
import { createExportQueue } from './export-queue.js';
import { createOtlpSender } from './otlp-sender.js';
import type { TracingSettings } from './settings.js';

/** The route of every forwarded request, as a span names it: never the path itself. */
const ROUTE = '/api/v1/*';

/** Tracing as the rest of the proxy sees it. */
export interface Tracing {
  readonly requests: RequestTracer;
  /** A token fetch ended: its span, linked from every request waiting meanwhile. */
  tokenFetched(outcome: FetchOutcome, seconds: number): void;
  /** A token was taken from the store: the requests waiting are no longer waiting for a fetch. */
  tokenAdopted(): void;
  storeOperation(operation: StoreOperation, result: StoreResult): void;
  /** Sends what is queued (within a bound) and stops. */
  shutdown(): Promise<void>;
}

export interface TracingDeps {
  /** The proxy's outbound dispatcher (net/dispatchers.ts): the collector is reached as the identity provider is. */
  dispatcher: Dispatcher;
  /** The gateway's origin, for the client spans' `server.address` and `server.port`. */
  gatewayUrl: URL;
  log: Log;
  dropped: (count: number) => void;
}

/** Loads the SDK and starts tracing as `settings` say. */
export async function createTracing(settings: TracingSettings, deps: TracingDeps): Promise<Tracing> {
  const [api, core, sdk, resources, transformer] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/otlp-transformer'),
  ]);
  const ratio = new sdk.TraceIdRatioBasedSampler(settings.ratio);
  const roots: Record<TracingSettings['sampler'], () => Sampler> = {
    always_on: () => new sdk.AlwaysOnSampler(),
    always_off: () => new sdk.AlwaysOffSampler(),
    traceidratio: () => ratio,
    parentbased_always_on: () => new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: () => new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: () => new sdk.ParentBasedSampler({ root: ratio }),
  };
  const send = createOtlpSender({
    url: settings.url,
    headers: settings.headers,
    dispatcher: deps.dispatcher,
    serialize: (spans) => transformer.ProtobufTraceSerializer.serializeRequest(spans),
    log: deps.log,
  });
  const queue = createExportQueue(send, deps.dropped);
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({ ...settings.resourceAttributes, 'service.name': settings.serviceName }),
    sampler: roots[settings.sampler](),
    spanProcessors: [queue],
  });
  const tracer: Tracer = provider.getTracer('ticket-auth-proxy');
  const propagator = new core.W3CTraceContextPropagator();
  const { SpanKind, SpanStatusCode, ROOT_CONTEXT, trace, defaultTextMapGetter } = api;
  const gateway = {
    'server.address': deps.gatewayUrl.hostname,
    'server.port': Number(deps.gatewayUrl.port || (deps.gatewayUrl.protocol === 'https:' ? 443 : 80)),
  };
  /** The requests waiting for a token: linked to the next fetch's span. */
  const waiting = new Set<Spans>();

  /** Sets (or replaces) `name` in a flat header list; a new one goes first, before the proxy's own at the end. */
  const setHeader = (headers: string[], name: string, value: string): void => {
    for (let i = 0; i < headers.length; i += 2) {
      if (headers[i]!.toLowerCase() === name) {
        headers[i + 1] = value;
        return;
      }
    }
    headers.unshift(name, value);
  };

  /** One request's spans: its server span, and the client span of the attempt in flight. */
  class Spans implements RequestTrace {
    private client: Span | undefined;
    private attempts = 0;
    private readonly context: Context;

    constructor(
      private readonly method: string,
      private readonly server: Span,
      parent: Context,
    ) {
      this.context = trace.setSpan(parent, server);
    }

    /** Linked from the next token fetch's span (tokenFetched below). */
    linkTo(link: Link): void {
      this.server.addLink(link);
    }

    awaitingToken(): void {
      waiting.add(this);
    }

    attempt(headers: string[], kind: AttemptKind): void {
      waiting.delete(this);
      this.client?.end();
      const attributes = {
        'http.request.method': this.method,
        ...gateway,
        'ticket_auth_proxy.attempt': kind,
        ...(this.attempts > 0 ? { 'http.request.resend_count': this.attempts } : {}),
      };
      this.attempts += 1;
      const client = (this.client = tracer.startSpan(this.method, { kind: SpanKind.CLIENT, attributes }, this.context));
      // The W3C traceparent of the attempt's span (its tracestate is the caller's, passed on as sent).
      const { traceId, spanId, traceFlags } = client.spanContext();
      setHeader(headers, 'traceparent', `00-${traceId}-${spanId}-${traceFlags & 1 ? '01' : '00'}`);
    }

    attemptEnded(status: number, error?: string): void {
      const client = this.client;
      if (client === undefined) return;
      if (status > 0) client.setAttribute('http.response.status_code', status);
      if (error !== undefined || status >= 500) {
        client.setAttribute('error.type', error ?? String(status));
        client.setStatus({ code: SpanStatusCode.ERROR });
      }
      client.end();
      this.client = undefined;
    }

    ended(status: number): void {
      waiting.delete(this);
      this.client?.end();
      this.server.setAttribute('http.response.status_code', status);
      if (status >= 500) {
        this.server.setAttribute('error.type', String(status));
        this.server.setStatus({ code: SpanStatusCode.ERROR });
      }
      this.server.end();
    }
  }

  const requests: RequestTracer = {
    began(req) {
      // Most callers send no traceparent: the propagator is asked only when one came.
      const parent =
        req.headers.traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
      const method = req.method!;
      const server = tracer.startSpan(
        `${method} ${ROUTE}`,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'http.route': ROUTE } },
        parent,
      );
      return new Spans(method, server, parent);
    },
  };

  return {
    requests,
    tokenFetched(outcome, seconds) {
      const end = Date.now();
      const span = tracer.startSpan(
        'token fetch',
        {
          kind: SpanKind.CLIENT,
          root: true,
          startTime: end - seconds * 1000,
          attributes: {
            'ticket_auth_proxy.token.outcome': outcome,
            ...(settings.tokenHost ? { 'server.address': settings.tokenHost } : {}),
          },
        },
        ROOT_CONTEXT,
      );
      if (outcome !== 'success') span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(end);
      const link = { context: span.spanContext() };
      for (const t of waiting) t.linkTo(link);
      waiting.clear();
    },
    tokenAdopted() {
      waiting.clear();
    },
    storeOperation(operation, result) {
      const span = tracer.startSpan(
        `token store ${operation}`,
        {
          kind: SpanKind.CLIENT,
          root: true,
          attributes: { 'db.system.name': 'redis', 'db.operation.name': operation, 'ticket_auth_proxy.store.result': result },
        },
        ROOT_CONTEXT,
      );
      if (result === 'error' || result === 'timeout') span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
    shutdown: async () => {
      await Promise.race([provider.shutdown(), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    },
  };
}
