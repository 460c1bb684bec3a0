/**
 * Traces through the proxy, against a real OTLP/HTTP receiver that decodes what the proxy sends
 * with the OpenTelemetry project's protobuf definitions: the span tree of a request that waited for
 * the first token, of one replayed after a gateway 401, of one sent again on a new connection; the
 * caller's trace continued; nothing secret in any span; a collector that hangs or refuses costs
 * spans, counted, never a request (docs/operations.md, "Traces").
 */
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createH2cServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { EXPORT_TIMEOUT_MS } from '../../src/telemetry/tracing/collector-export.js';
import { readDoc, section } from '../helpers/docs.js';
import { closedPort, pollUntil, runCli } from '../helpers/index.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { startRawGateway, type RawGateway } from '../helpers/raw-gateway.js';
import { test, type Stack, type StartStack } from '../helpers/stack.js';

const SECRET = 'tracing-secret-5kq2';
const CLIENT_ID = 'tracing-client-7q';
const SERVER = 2;
const CLIENT = 3;

const receivers: OtlpReceiver[] = [];
const gateways: RawGateway[] = [];
test.afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
  for (const g of gateways.splice(0)) await g.close();
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  receivers.push(r);
  return r;
}

/** A proxy exporting every span to `r`. */
function tracedStack(stack: StartStack, r: OtlpReceiver, options: Parameters<StartStack>[0] = {}): Promise<Stack> {
  const env = typeof options.env === 'function' ? {} : (options.env ?? {});
  return stack({
    secret: SECRET,
    clientId: CLIENT_ID,
    ...options,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_TRACES_SAMPLER: 'always_on', ...env },
  });
}

/** The server spans received, once `count` have arrived (spans are exported every second). */
async function serverSpans(r: OtlpReceiver, count: number): Promise<ReceivedSpan[]> {
  await pollUntil(() => r.spans.filter((s) => s.kind === SERVER).length >= count, { timeoutMs: 10_000, intervalMs: 100 });
  return r.spans.filter((s) => s.kind === SERVER);
}

/** The client spans under `server`, in the order they were sent, once `count` have arrived. */
async function attemptsOf(r: OtlpReceiver, server: ReceivedSpan, count: number): Promise<ReceivedSpan[]> {
  const of = (): ReceivedSpan[] => r.spans.filter((s) => s.kind === CLIENT && s.parentSpanId === server.spanId);
  await pollUntil(() => of().length >= count, { timeoutMs: 10_000, intervalMs: 100 });
  return of().sort(
    (a, b) => Number(a.attributes['http.request.resend_count'] ?? 0) - Number(b.attributes['http.request.resend_count'] ?? 0),
  );
}

const dropped = (s: Stack): Promise<number> => s.metric(/^ticket_auth_proxy_trace_spans_dropped_total (\d+)/m);

describe('traces through the proxy', () => {
  test('a request that waited for the first token: its server span links the token fetch; the gateway gets the client span as parent', async ({
    stack,
  }) => {
    const r = await receiver();
    const s = await tracedStack(stack, r, { ready: false, tokenFault: { kind: 'delay', ms: 400 } });
    const res = await fetch(`${s.proxy.proxyUrl}/api/v1/tickets?q=query-marker-9z`);
    expect(res.status).toBe(200);
    const [server] = await serverSpans(r, 1);
    expect(server).toMatchObject({
      name: 'GET /api/v1/*',
      parentSpanId: '',
      attributes: {
        'http.request.method': 'GET',
        'http.route': '/api/v1/*',
        'http.response.status_code': 200,
        'ticket_auth_proxy.route': 'default',
      },
      resource: { 'service.name': 'ticket-auth-proxy' },
    });
    await pollUntil(() => r.spans.some((x) => x.name === 'token fetch'), { timeoutMs: 10_000, intervalMs: 100 });
    const fetchSpan = r.spans.find((x) => x.name === 'token fetch')!;
    expect(fetchSpan.attributes).toMatchObject({
      'ticket_auth_proxy.token.outcome': 'success',
      'ticket_auth_proxy.route': 'default',
      'server.address': new URL(s.gateway.url).host,
    });
    expect(server!.links).toContainEqual(expect.objectContaining({ traceId: fetchSpan.traceId, spanId: fetchSpan.spanId }));
    const [attempt] = await attemptsOf(r, server!, 1);
    expect(attempt).toMatchObject({
      name: 'GET',
      traceId: server!.traceId,
      attributes: { 'ticket_auth_proxy.attempt': 'first', 'http.response.status_code': 200 },
    });
    expect(s.gateway.apiRequests.at(-1)!.headers.traceparent).toBe(`00-${server!.traceId}-${attempt!.spanId}-01`);
  });

  test("with routes, each request's spans name its route and its gateway, and link its own route's token fetch alone", async ({
    stack,
    mock,
  }) => {
    const r = await receiver();
    const eu = await mock({ clients: { 'eu-app': SECRET } });
    const us = await mock({ clients: { 'us-app': SECRET } });
    for (const g of [eu, us]) g.setTokenFault({ kind: 'delay', ms: 400 });
    const file = join(mkdtempSync(join(tmpdir(), 'tap-traced-routes-')), 'proxy.yaml');
    const route = (name: string, g: MockTicketService, extra: string[]): string[] => [
      `  - name: ${name}`,
      `    baseUrl: ${g.url}`,
      `    clientId: ${name}-app`,
      ...extra,
    ];
    writeFileSync(
      file,
      ['routes:', ...route('eu', eu, ['    mount: /eu']), ...route('us', us, ['    paths: [/api/v1, /api/v2]'])].join('\n'),
    );
    const s = await tracedStack(stack, r, { gateway: eu, ready: false, env: { CONFIG_FILE: file } });
    const [toEu, toUs] = await Promise.all([fetch(`${s.proxy.proxyUrl}/eu/api/v1/tickets`), fetch(`${s.proxy.proxyUrl}/api/v2/tickets`)]);
    // The mock has no /api/v2: its own 404, forwarded (a path the route does not forward makes no span).
    expect([toEu.status, toUs.status]).toEqual([200, 404]);
    expect(us.apiRequests.map((a) => a.url)).toEqual(['/api/v2/tickets']);
    const servers = await serverSpans(r, 2);
    await pollUntil(() => r.spans.filter((x) => x.name === 'token fetch').length >= 2, { timeoutMs: 10_000, intervalMs: 100 });
    const fetchOf = (name: string): ReceivedSpan =>
      r.spans.find((x) => x.name === 'token fetch' && x.attributes['ticket_auth_proxy.route'] === name)!;
    const serverOf = (name: string): ReceivedSpan => servers.find((x) => x.attributes['ticket_auth_proxy.route'] === name)!;
    expect(serverOf('eu')).toMatchObject({ name: 'GET /api/v1/*', attributes: { 'http.route': '/api/v1/*' } });
    expect(serverOf('us')).toMatchObject({ name: 'GET /api/v2/*', attributes: { 'http.route': '/api/v2/*' } });
    for (const [name, g] of [
      ['eu', eu],
      ['us', us],
    ] as const) {
      expect(fetchOf(name).attributes['server.address']).toBe(new URL(g.url).host);
      // Linked to its own route's fetch, never the other's.
      expect(serverOf(name).links.map((l) => l.spanId)).toEqual([fetchOf(name).spanId]);
      const [attempt] = await attemptsOf(r, serverOf(name), 1);
      expect(attempt!.attributes).toMatchObject({ 'server.address': new URL(g.url).hostname, 'ticket_auth_proxy.route': name });
    }
  });

  test('a request replayed after a gateway 401: two client spans under one server span, each sent with its own traceparent', async ({
    stack,
  }) => {
    const r = await receiver();
    const s = await tracedStack(stack, r);
    s.gateway.revokeAll();
    const before = s.gateway.apiRequests.length;
    expect((await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    const [server] = await serverSpans(r, 1);
    const attempts = await attemptsOf(r, server!, 2);
    expect(attempts.map((a) => [a.attributes['ticket_auth_proxy.attempt'], a.attributes['http.response.status_code']])).toEqual([
      ['first', 401],
      ['replay', 200],
    ]);
    const sent = s.gateway.apiRequests.slice(before).map((a) => a.headers.traceparent);
    expect(sent).toEqual(attempts.map((a) => `00-${server!.traceId}-${a.spanId}-01`));
  });

  test('a request sent again on a new connection: the broken attempt and the retry are spans of their own', async ({ stack, mock }) => {
    const r = await receiver();
    const g = await startRawGateway({ act: (req) => (req.onConnection === 1 ? { answer: 200, body: `ok ${req.path}` } : { close: true }) });
    gateways.push(g);
    const tokens = await mock({ clients: { [CLIENT_ID]: SECRET } });
    const s = await tracedStack(stack, r, {
      gateway: tokens,
      env: { BASE_URL: g.url, TOKEN_URL: `${tokens.url}/api/v1/oauth2/token` },
    });
    // A warm-up leaves one idle pooled connection, which breaks under the next request.
    expect((await fetch(`${s.proxy.proxyUrl}/api/v1/warm`)).status).toBe(200);
    expect((await fetch(`${s.proxy.proxyUrl}/api/v1/tickets/7`)).status).toBe(200);
    const servers = await serverSpans(r, 2);
    const server = servers.find((x) => x.traceId === g.seen.at(-1)!.headers.traceparent!.split('-')[1])!;
    const attempts = await attemptsOf(r, server, 2);
    expect(attempts.map((a) => a.attributes['ticket_auth_proxy.attempt'])).toEqual(['first', 'retry']);
    expect(attempts[0]!.attributes['error.type']).toBeDefined();
    expect(attempts[1]!.attributes['http.response.status_code']).toBe(200);
    expect(g.seen.filter((x) => x.path === '/api/v1/tickets/7').map((x) => x.headers.traceparent)).toEqual(
      attempts.map((a) => `00-${server.traceId}-${a.spanId}-01`),
    );
  });

  test("continues the caller's trace: its traceparent is the server span's parent, its tracestate goes on to the gateway", async ({
    stack,
  }) => {
    const r = await receiver();
    const s = await tracedStack(stack, r, { env: { OTEL_TRACES_SAMPLER: 'parentbased_always_off' } });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`, {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: 'vendor=opaque' },
    });
    expect(res.status).toBe(200);
    const [server] = await serverSpans(r, 1);
    expect(server).toMatchObject({ traceId, parentSpanId: '00f067aa0ba902b7' });
    const [attempt] = await attemptsOf(r, server!, 1);
    const got = s.gateway.apiRequests.at(-1)!.headers;
    expect(got.traceparent).toBe(`00-${traceId}-${attempt!.spanId}-01`);
    expect(got.tracestate).toBe('vendor=opaque');
  });

  test("sends the gateway one traceparent, its own: the caller's 200 are all removed, and its tracestate with them", async ({ stack }) => {
    const r = await receiver();
    const s = await tracedStack(stack, r);
    const callerTraces = Array.from({ length: 200 }, (_, i) => `${(i + 1).toString(16).padStart(32, '0')}`);
    const headers = callerTraces.flatMap((traceId, i) => [i % 2 ? 'Traceparent' : 'traceparent', `00-${traceId}-00f067aa0ba902b7-01`]);
    const res = await request(`${s.proxy.proxyUrl}/api/v1/tickets`, { headers: [...headers, 'tracestate', 'vendor=opaque'] });
    await res.body.dump();
    expect(res.statusCode).toBe(200);
    const [server] = await serverSpans(r, 1);
    // Several traceparent fields are no valid parent: the proxy starts a trace of its own.
    expect(server!.parentSpanId).toBe('');
    expect(callerTraces).not.toContain(server!.traceId);
    const [attempt] = await attemptsOf(r, server!, 1);
    const raw = s.gateway.apiRequests.at(-1)!.rawHeaders;
    const sent = (name: string): string[] => raw.filter((_, i) => i % 2 === 1 && raw[i - 1]!.toLowerCase() === name);
    expect(sent('traceparent')).toEqual([`00-${server!.traceId}-${attempt!.spanId}-01`]);
    expect(sent('tracestate')).toEqual([]);
  });

  test("replaces a caller's malformed traceparent with its own, and drops the tracestate that came with it", async ({ stack }) => {
    const r = await receiver();
    const s = await tracedStack(stack, r);
    const res = await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`, {
      headers: { traceparent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', tracestate: 'vendor=opaque' },
    });
    expect(res.status).toBe(200);
    const [server] = await serverSpans(r, 1);
    expect(server!.parentSpanId).toBe('');
    const [attempt] = await attemptsOf(r, server!, 1);
    const got = s.gateway.apiRequests.at(-1)!.headers;
    expect(got.traceparent).toBe(`00-${server!.traceId}-${attempt!.spanId}-01`);
    expect(got.tracestate).toBeUndefined();
  });

  test('says at start where spans go and how they are sampled, never the headers sent to the collector', async ({ stack }) => {
    const r = await receiver();
    const key = 'otlp-key-9t4w';
    const s = await tracedStack(stack, r, {
      env: {
        OTEL_EXPORTER_OTLP_HEADERS: `api-key=${key}`,
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      },
      mustNotLeak: [key],
    });
    const line = s.proxy.lines().find((l) => l.msg === 'tracing on: spans are exported to the collector');
    expect(line).toMatchObject({ level: 30, collector: r.url, sampler: 'parentbased_traceidratio (ratio 0.25)' });
    expect(JSON.stringify(line)).not.toContain(key);
  });

  test('makes a span of each token store operation, with its result', async ({ stack }) => {
    const r = await receiver();
    // A store on a closed port: each operation fails at once, and the proxy fetches for itself.
    await tracedStack(stack, r, { env: { TOKEN_STORE_URL: `redis://127.0.0.1:${await closedPort()}` } });
    await pollUntil(() => r.spans.some((x) => x.name.startsWith('token store ')), { timeoutMs: 10_000, intervalMs: 100 });
    const span = r.spans.find((x) => x.name.startsWith('token store '))!;
    expect(span.kind).toBe(CLIENT);
    expect(span.name).toBe(`token store ${String(span.attributes['db.operation.name'])}`);
    expect(span.attributes).toMatchObject({
      'db.system.name': 'redis',
      'ticket_auth_proxy.store.result': expect.stringMatching(/^(error|timeout)$/),
    });
  });

  test('puts no token, secret, client id, path or query in any span', async ({ stack }) => {
    const r = await receiver();
    const s = await tracedStack(stack, r, { env: { PASSTHROUGH_BASIC: 'true' } });
    s.gateway.revokeAll();
    expect((await fetch(`${s.proxy.proxyUrl}/api/v1/tickets/private-path-3w?q=query-marker-9z`)).status).toBe(404);
    await pollUntil(() => r.spans.some((x) => x.name === 'token fetch') && r.spans.some((x) => x.kind === SERVER), {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    const exported = r.exports.map((e) => e.body.toString('latin1')).join('\n') + JSON.stringify(r.spans);
    const tokens = s.gateway.issuedTokens();
    expect(tokens.length).toBeGreaterThan(1);
    for (const secret of [...tokens, SECRET, CLIENT_ID, 'query-marker-9z', 'private-path-3w', 'Bearer'])
      expect(exported).not.toContain(secret);
  });
});

describe('a collector that is slow or down', () => {
  test(
    'hanging: every request is answered, one export at a time, and the spans that do not fit the queue are dropped and counted',
    {
      timeout: 120_000,
    },
    async ({ stack }) => {
      const r = await receiver();
      r.setMode('hang');
      const started = Date.now();
      const s = await tracedStack(stack, r);
      // Two spans a request: enough to fill the queue behind the batch the collector holds.
      const statuses: number[] = [];
      for (let round = 0; round < 30 && (await dropped(s)) === 0; round++) {
        const batch = await Promise.all(
          Array.from({ length: 100 }, async () => {
            const res = await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`);
            await res.arrayBuffer();
            return res.status;
          }),
        );
        statuses.push(...batch);
      }
      expect(new Set(statuses)).toEqual(new Set([200]));
      expect(await dropped(s)).toBeGreaterThan(0);
      // The collector holds the first export; the next is sent only once the proxy has given that
      // one up, after its export timeout (which a slow machine's run of requests may reach).
      expect(r.exports.length).toBeGreaterThan(0);
      expect(r.exports.length).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / EXPORT_TIMEOUT_MS));
    },
  );

  test('answering 503: the requests are answered, and each refused batch is counted as dropped', async ({ stack }) => {
    const r = await receiver();
    r.setMode('refuse');
    const s = await tracedStack(stack, r);
    expect(await dropped(s)).toBe(0);
    for (let i = 0; i < 5; i++) expect((await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    await pollUntil(async () => (await dropped(s)) >= 10, { timeoutMs: 10_000, intervalMs: 200 });
    expect(r.exports.length).toBeGreaterThan(0);
    expect(s.proxy.lines().some((l) => l.msg === 'spans could not be exported; dropping them until the collector answers')).toBe(true);
  });

  test('an HTTP/2 port: the requests are answered, the spans counted as dropped, and the log says what the answer means', async ({
    stack,
  }) => {
    const h2 = createH2cServer();
    h2.on('stream', (stream) => stream.respond({ ':status': 200 }, { endStream: true }));
    h2.listen(0, '127.0.0.1');
    await once(h2, 'listening');
    try {
      const collector = `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
      const s = await stack({ secret: SECRET, env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_TRACES_SAMPLER: 'always_on' } });
      expect((await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
      const line = await s.proxy.waitForLog(
        (l) => l.msg === 'spans could not be exported; dropping them until the collector answers',
        10_000,
      );
      expect(line).toMatchObject({
        collector,
        reason: 'the collector answered in HTTP/2, not HTTP/1.1',
        hint: expect.stringContaining("an HTTP/2-only port, such as OTLP/gRPC's 4317, answers so") as string,
      });
      await pollUntil(async () => (await dropped(s)) >= 2, { timeoutMs: 10_000, intervalMs: 200 });
    } finally {
      h2.close();
    }
  });
});

describe('check with a collector named', () => {
  const checkEnv = (gatewayUrl: string, secret: string, clientId: string): Record<string, string> => ({
    BASE_URL: gatewayUrl,
    CLIENT_ID: clientId,
    CLIENT_SECRET: secret,
  });

  test('sends one empty export with the headers and says the collector took it; the key is never shown', async ({ mock }) => {
    const r = await receiver();
    const gateway = await mock({ clients: { [CLIENT_ID]: SECRET } });
    const key = 'otlp-key-3vq8';
    const res = await runCli(['check'], {
      ...checkEnv(gateway.url, SECRET, CLIENT_ID),
      OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      OTEL_EXPORTER_OTLP_HEADERS: `api-key=${key}`,
    });
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(
      `tracing: spans go to ${r.url}/v1/traces, sampled parentbased_traceidratio (ratio 0.01); the collector took an empty export (200)\n`,
    );
    expect(r.exports).toHaveLength(1);
    expect(r.exports[0]).toMatchObject({ path: '/v1/traces', body: Buffer.alloc(0) });
    expect(r.exports[0]!.headers).toMatchObject({ 'api-key': key, 'content-type': 'application/x-protobuf' });
    expect(res.stdout + res.stderr).not.toContain(key);
  });

  test('warns, exit status unchanged, when the collector refuses the export or answers in HTTP/2, with what to change', async ({
    mock,
  }) => {
    const gateway = await mock({ clients: { [CLIENT_ID]: SECRET } });
    const env = checkEnv(gateway.url, SECRET, CLIENT_ID);
    const r = await receiver();
    r.setMode('refuse');
    const refused = await runCli(['check'], { ...env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${r.url}/v1/traces` });
    expect(refused.code).toBe(0);
    expect(refused.stderr).toContain('ticket-auth-proxy: warning: the collector did not take an empty export: the collector answered 503');
    // An HTTP/2-only port (gRPC's, 4317, is one) answers an HTTP/1.1 request with its SETTINGS frame.
    const h2 = createH2cServer();
    h2.on('stream', (stream) => stream.respond({ ':status': 200 }, { endStream: true }));
    h2.listen(0, '127.0.0.1');
    await once(h2, 'listening');
    try {
      const port = (h2.address() as AddressInfo).port;
      const http2 = await runCli(['check'], { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
      expect(http2.code).toBe(0);
      expect(http2.stdout).toContain('ok: token obtained');
      expect(http2.stdout).toContain(`tracing: spans go to http://127.0.0.1:${port}/v1/traces`);
      // The warning docs/operations.md ("Traces") quotes, whole.
      const documented = /^ticket-auth-proxy: warning: the collector did not take an empty export: .*HTTP\/2.*$/m.exec(
        section(readDoc('docs/operations.md'), 'Traces'),
      )![0];
      expect(http2.stderr.split('\n')).toContain(documented);
    } finally {
      h2.close();
    }
    const down = await runCli(['check'], { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await closedPort()}` });
    expect(down.code).toBe(0);
    expect(down.stderr).toMatch(
      /warning: the collector did not take an empty export: ECONNREFUSED; nothing listens at http:\/\/127\.0\.0\.1:\d+/,
    );
  });

  test('says nothing of tracing when no collector is named', async ({ mock }) => {
    const gateway = await mock({ clients: { [CLIENT_ID]: SECRET } });
    const res = await runCli(['check'], checkEnv(gateway.url, SECRET, CLIENT_ID));
    expect(res.code).toBe(0);
    expect(res.stdout + res.stderr).not.toMatch(/tracing|collector/);
  });
});

describe('tracing off (no collector named)', () => {
  test("registers no tracing metric and passes the caller's traceparent on untouched", async ({ stack }) => {
    const s = await stack({ secret: SECRET });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect((await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`, { headers: { traceparent } })).status).toBe(200);
    expect(s.gateway.apiRequests.at(-1)!.headers.traceparent).toBe(traceparent);
    expect((await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(s.gateway.apiRequests.at(-1)!.headers.traceparent).toBeUndefined();
    expect(Number.isNaN(await dropped(s))).toBe(true);
  });
});
