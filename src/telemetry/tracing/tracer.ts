/**
 * The proxy's spans (docs/operations.md, "Traces"), loaded when tracing is on and only then
 * (index.ts imports this module on demand): a server span per forwarded request, a client span per
 * attempt to the gateway, a span per token fetch linked from the requests that waited for it, a
 * span per token store operation. No attribute holds a path, a query, a token, a header value or a
 * client id.
 *
 * The spans are few and their attributes fixed, so they are the proxy's own records (span-record.ts)
 * rather than the OpenTelemetry SDK's spans, which carry a context, attribute checks and limits
 * made for any instrumentation: a request costs two small objects, its ids as bytes and one hex
 * string for its `traceparent`, its attributes encoded once per kind of span, and the encoding of
 * each batch is done apart from the requests (otlp-encoding.ts, export-queue.ts).
 * docs/performance.md, "Tracing", has the cost.
 */
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { Log } from '../../core/log.js';
import type { AttemptKind, RequestTrace, RequestTracer } from '../../proxy/recorder.js';
import type { StoreOperation, StoreResult } from '../../store/index.js';
import type { FetchOutcome } from '../../token/errors.js';
import { describeSampler } from './collector-check.js';
import { createExportQueue } from './export-queue.js';
import { copyId, IdSource, PARENT_ID, SLOT_BYTES, SPAN_ID, TRACE_ID } from './ids.js';
import { encodeExport, exportHead, spanShape } from './otlp-encoding.js';
import { createOtlpSender } from './otlp-sender.js';
import { createSampler } from './sampler.js';
import type { TracingSettings } from './settings.js';
import { CLIENT, SERVER, SpanRecord, type SpanLink, type SpanShape } from './span-record.js';
import { putTraceparent, readCallerTrace, removeCallerTrace, type CallerTrace } from './trace-context.js';

/** A route's path pattern, as `http.route` names it: the prefix, never the path itself. */
const pattern = (prefix: string): string => `${prefix}/*`;
/** The instrumentation scope of every span. */
const SCOPE = 'ticket-auth-proxy';

/** Tracing as the rest of the proxy sees it. */
export interface Tracing {
  /** One route's tracing: its requests' spans and its token fetches', each naming the route. */
  route(route: TracedRoute): RouteTracing;
  storeOperation(operation: StoreOperation, result: StoreResult): void;
  /** Sends what is queued (within a bound) and stops. */
  shutdown(): Promise<void>;
}

/** What a route's spans say of it: its name, its gateway's origin, the path prefixes it forwards, its token endpoint's host. */
export interface TracedRoute {
  readonly name: string;
  readonly baseUrl: string;
  readonly paths: readonly string[];
  /** The token endpoint's host (never its path or the client id), when known before the first fetch. */
  readonly tokenHost: string | undefined;
}

/** One route's tracing: a token fetch is linked from the requests of that route waiting meanwhile, never another's. */
export interface RouteTracing {
  readonly requests: RequestTracer;
  /** A token fetch of the route's ended: its span, linked from every request of the route waiting meanwhile. */
  tokenFetched(outcome: FetchOutcome, seconds: number): void;
  /** A token was taken from the store: the route's requests waiting are no longer waiting for a fetch. */
  tokenAdopted(): void;
}

export interface TracingDeps {
  /** The proxy's outbound dispatcher (net/dispatchers.ts): the collector is reached as the identity provider is. */
  dispatcher: Dispatcher;
  log: Log;
  dropped: (count: number) => void;
}

/** The spans' clock: milliseconds since `performance.timeOrigin`, below the millisecond (otlp-encoding.ts adds the origin). */
const now = (): number => performance.now();

/** A span shape per key, made once: the keys are bounded sets (HTTP methods, attempt kinds, outcomes, operations). */
function shapes(make: (key: string) => SpanShape): (key: string) => SpanShape {
  const made = new Map<string, SpanShape>();
  return (key) => {
    let shape = made.get(key);
    if (shape === undefined) made.set(key, (shape = make(key)));
    return shape;
  };
}

/** Starts tracing as `settings` say. */
export function createTracing(settings: TracingSettings, deps: TracingDeps): Tracing {
  const ids = new IdSource();
  const sample = createSampler(settings.sampler, settings.ratio);
  const head = exportHead({ ...settings.resourceAttributes, 'service.name': settings.serviceName }, SCOPE, performance.timeOrigin);
  const queue = createExportQueue<SpanRecord>(
    createOtlpSender({
      url: settings.url,
      headers: settings.headers,
      dispatcher: deps.dispatcher,
      encode: (spans) => encodeExport(head, spans),
      log: deps.log,
    }),
    deps.dropped,
  );
  deps.log.info({ collector: settings.url.origin, sampler: describeSampler(settings) }, 'tracing on: spans are exported to the collector');

  const storeShape = shapes((key) => {
    const [operation, result] = key.split(' ') as [string, string];
    return spanShape(`token store ${operation}`, {
      'db.system.name': 'redis',
      'db.operation.name': operation,
      'ticket_auth_proxy.store.result': result,
    });
  });

  /** A span ended: to the export queue. */
  const finish = (span: SpanRecord, end: number): void => {
    span.end = end;
    queue.add(span);
  };

  /** One route's span shapes, and its requests waiting for a token: linked to its next fetch's span. */
  class RouteSpans {
    readonly waiting = new Set<RequestSpans>();
    /** The server span's shape by method, for each of the route's path prefixes. */
    readonly server: ((method: string) => SpanShape)[];
    readonly attempt: Record<AttemptKind, (method: string) => SpanShape>;
    readonly fetch: (outcome: string) => SpanShape;

    constructor(readonly route: TracedRoute) {
      const url = new URL(route.baseUrl);
      const gateway = {
        'server.address': url.hostname,
        'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
        'ticket_auth_proxy.route': route.name,
      };
      // Llhttp, Node's HTTP parser, takes a fixed list of methods: these maps stay small.
      this.server = route.paths.map((prefix) =>
        shapes((method) =>
          spanShape(`${method} ${pattern(prefix)}`, {
            'http.request.method': method,
            'http.route': pattern(prefix),
            'ticket_auth_proxy.route': route.name,
          }),
        ),
      );
      const attempt = (kind: AttemptKind): ((method: string) => SpanShape) =>
        shapes((method) => spanShape(method, { 'http.request.method': method, ...gateway, 'ticket_auth_proxy.attempt': kind }));
      this.attempt = { first: attempt('first'), retry: attempt('retry'), replay: attempt('replay') };
      this.fetch = shapes((outcome) =>
        spanShape('token fetch', {
          'ticket_auth_proxy.token.outcome': outcome,
          'ticket_auth_proxy.route': route.name,
          ...(route.tokenHost === undefined ? {} : { 'server.address': route.tokenHost }),
        }),
      );
    }

    /** The server span's shape of a request for `target` (a path under one of the route's prefixes). */
    serverShape(method: string, target: string): SpanShape {
      const server = this.server;
      if (server.length === 1) return server[0]!(method);
      const paths = this.route.paths;
      for (let i = 0; i < paths.length; i++) {
        const prefix = paths[i]!;
        const next = target.charCodeAt(prefix.length);
        if (target.startsWith(prefix) && (Number.isNaN(next) || next === 47 /* / */ || next === 63) /* ? */) return server[i]!(method);
      }
      return server[0]!(method);
    }
  }

  /**
   * One request's spans: its server span and the client span of the attempt in flight, both
   * undefined when the trace is not sampled (the gateway still gets the proxy's `traceparent`).
   * The ids of the attempt to come are in the slot at `at` of `block` (ids.ts): its trace id, its
   * own span id, and the server span's as its parent.
   */
  class RequestSpans implements RequestTrace {
    private readonly server: SpanRecord | undefined = undefined;
    private client: SpanRecord | undefined = undefined;
    private attempts = 0;
    /** Where the proxy's `traceparent` is in the header list; -1 before the first attempt. */
    private traceparentAt = -1;
    private waits = false;

    constructor(
      private readonly of: RouteSpans,
      private readonly method: string,
      target: string,
      private block: Buffer,
      private at: number,
      private readonly sampled: boolean,
      /** What the caller sent of a trace context, when it sent a `traceparent`. */
      private readonly caller: CallerTrace | undefined,
      start: number,
    ) {
      if (!sampled) return;
      const parent = caller?.parent;
      const serverAt = ids.take(SLOT_BYTES);
      const serverIds = ids.block;
      copyId(block, at + TRACE_ID, serverIds, serverAt + TRACE_ID, 16);
      if (parent !== undefined) serverIds.write(parent.spanId, serverAt + PARENT_ID, 'hex');
      copyId(serverIds, serverAt + SPAN_ID, block, at + PARENT_ID, 8);
      const state = caller?.traceState ?? '';
      this.server = new SpanRecord(
        serverIds,
        serverAt,
        parent !== undefined,
        parent !== undefined,
        state,
        SERVER,
        of.serverShape(method, target),
        start,
      );
    }

    /** Linked from the next token fetch's span (tokenFetched below). */
    linkTo(link: SpanLink): void {
      if (this.server !== undefined) (this.server.links ??= []).push(link);
    }

    awaitingToken(): void {
      this.waits = true;
      this.of.waiting.add(this);
    }

    attempt(headers: string[], kind: AttemptKind): void {
      const at = now();
      if (this.waits) this.of.waiting.delete(this);
      if (this.client !== undefined) finish(this.client, at);
      const server = this.server;
      if (this.traceparentAt < 0) {
        // Every traceparent the caller sent goes, and its tracestate with them when its parent was not valid.
        if (this.caller !== undefined) removeCallerTrace(headers, this.caller.parent === undefined);
      } else {
        // A later attempt: a span id of its own, in the same trace, under the same server span.
        const next = ids.take(SLOT_BYTES);
        copyId(this.block, this.at + TRACE_ID, ids.block, next + TRACE_ID, 16);
        if (server !== undefined) copyId(server.ids, server.at + SPAN_ID, ids.block, next + PARENT_ID, 8);
        this.block = ids.block;
        this.at = next;
      }
      if (server !== undefined) {
        const client = new SpanRecord(this.block, this.at, true, false, server.traceState, CLIENT, this.of.attempt[kind](this.method), at);
        client.resendCount = this.attempts;
        this.client = client;
      }
      this.attempts += 1;
      // The trace id and the span id are side by side in the slot: one hex string for both.
      const hex = this.block.toString('hex', this.at + TRACE_ID, this.at + SPAN_ID + 8);
      const traceparent = `00-${hex.slice(0, 32)}-${hex.slice(32)}-${this.sampled ? '01' : '00'}`;
      this.traceparentAt = putTraceparent(headers, traceparent, this.traceparentAt);
    }

    attemptEnded(status: number, error?: string): void {
      const client = this.client;
      if (client === undefined) return;
      client.status = status;
      if (error !== undefined || status >= 500) {
        client.errorType = error ?? String(status);
        client.failed = true;
      }
      finish(client, now());
      this.client = undefined;
    }

    ended(status: number): void {
      const at = now();
      if (this.waits) this.of.waiting.delete(this);
      if (this.client !== undefined) finish(this.client, at);
      this.client = undefined;
      const server = this.server;
      if (server === undefined) return;
      server.status = status;
      if (status >= 500) {
        server.errorType = String(status);
        server.failed = true;
      }
      finish(server, at);
    }
  }

  /** The tracer of one route's requests. */
  const requestsOf = (of: RouteSpans): RequestTracer => ({
    began(req: IncomingMessage, target: string) {
      const start = now();
      const caller = readCallerTrace(req.rawHeaders);
      const parent = caller?.parent;
      // The first attempt's ids: a random trace id, unless the caller's trace is continued.
      const at = ids.take(SLOT_BYTES);
      const block = ids.block;
      if (parent !== undefined) block.write(parent.traceId, at + TRACE_ID, 'hex');
      return new RequestSpans(of, req.method!, target, block, at, sample(parent, block, at + TRACE_ID), caller, start);
    },
  });

  /** A span of a trace of its own (a token fetch, a store operation), when sampled; its link either way. */
  const rootSpan = (shape: () => SpanShape, start: number, end: number, failed: boolean): SpanLink => {
    const at = ids.take(SLOT_BYTES);
    const block = ids.block;
    const sampled = sample(undefined, block, at + TRACE_ID);
    if (sampled) {
      const span = new SpanRecord(block, at, false, false, '', CLIENT, shape(), start);
      span.failed = failed;
      finish(span, end);
    }
    return { ids: block, at, sampled };
  };

  return {
    route(route) {
      const of = new RouteSpans(route);
      return {
        requests: requestsOf(of),
        tokenFetched(outcome, seconds) {
          const end = now();
          const link = rootSpan(() => of.fetch(outcome), end - seconds * 1000, end, outcome !== 'success');
          for (const t of of.waiting) t.linkTo(link);
          of.waiting.clear();
        },
        tokenAdopted() {
          of.waiting.clear();
        },
      };
    },
    storeOperation(operation, result) {
      const at = now();
      rootSpan(() => storeShape(`${operation} ${result}`), at, at, result === 'error' || result === 'timeout');
    },
    shutdown: async () => {
      await Promise.race([queue.shutdown(), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    },
  };
}
