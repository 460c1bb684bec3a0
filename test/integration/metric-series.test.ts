/**
 * What a pod costs a Prometheus: the series on /metrics of a real proxy holding a token, idle and
 * after traffic of every method and of the statuses the proxy answers, in both runtime profiles
 * (docs/operations.md, "Series per pod").
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { closedPort } from '../helpers/index.js';
import { metricsText, test, type Stack } from '../helpers/stack.js';

/** The series of one scrape: every sample line, by name with its labels. */
function series(text: string): string[] {
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}

function families(lines: string[]): Set<string> {
  return new Set(lines.map((l) => l.replace(/[{ ].*$/, '').replace(/_(bucket|sum|count)$/, '')));
}

/** One request through the proxy with any method (fetch refuses some), its body read; the status. */
function send(stack: Stack, method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${stack.proxy.proxyUrl}${path}`, { method }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end(method === 'POST' || method === 'PUT' || method === 'PATCH' ? '{}' : undefined);
  });
}

const PROXY_OWN_IDLE = [
  'ticket_auth_proxy_token_fetches_total',
  'ticket_auth_proxy_token_fetch_duration_seconds',
  'ticket_auth_proxy_token_expiry_timestamp_seconds',
  'ticket_auth_proxy_token_last_success_timestamp_seconds',
  'ticket_auth_proxy_token_consecutive_failures',
  'ticket_auth_proxy_upstream_unauthorized_total',
  'ticket_auth_proxy_upstream_stalls_total',
  'ticket_auth_proxy_overload_shed_total',
  'ticket_auth_proxy_overload_reset_total',
  'ticket_auth_proxy_token_cache_entries',
  'ticket_auth_proxy_build_info',
];
const ESSENTIALS = [
  'process_resident_memory_bytes',
  'process_cpu_seconds_total',
  'process_start_time_seconds',
  'process_open_fds',
  'nodejs_heap_size_used_bytes',
  'nodejs_eventloop_lag_p99_seconds',
];

/** Every method the proxy labels by name, and one it counts as `other`. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND'];
/** The request duration histogram's series per method: its bounds, `+Inf`, a sum and a count. */
const HISTOGRAM_SERIES = 9 + 1 + 2;

/** Traffic of every method, and of statuses from the gateway and from the proxy; the (method, code) pairs it made. */
async function traffic(stack: Stack): Promise<Set<string>> {
  const pairs = new Set<string>();
  const label = (method: string): string => (method === 'PROPFIND' ? 'other' : method);
  for (const method of METHODS) pairs.add(`${label(method)} ${await send(stack, method, '/api/v1/echo?q=x')}`);
  pairs.add(`GET ${await send(stack, 'GET', '/api/v1/redirect?to=/api/v1/tickets')}`);
  pairs.add(`POST ${await send(stack, 'POST', '/api/v1/tickets')}`);
  pairs.add(`GET ${await send(stack, 'GET', '/elsewhere')}`);
  pairs.add(`GET ${await send(stack, 'GET', '/api/v1/hang')}`);
  // The same again: seen pairs add no series.
  for (const method of METHODS) await send(stack, method, '/api/v1/echo');
  return pairs;
}

describe('the series a pod exports', () => {
  test('idle with a token at most 40 by default, the process essentials among them; traffic adds a fixed set', async ({ stack }) => {
    const s = await stack({ env: { UPSTREAM_TIMEOUT_MS: '300' } });
    const idle = series(await metricsText(s.proxy));
    expect(idle.length).toBeLessThanOrEqual(40);
    expect([...families(idle)].sort()).toEqual([...PROXY_OWN_IDLE, ...ESSENTIALS].sort());

    const pairs = await traffic(s);
    // What the traffic was: 200s of every method, the gateway's 302 and 404, the proxy's 404, 405 and 504.
    expect([...pairs].sort()).toEqual(
      [
        ...METHODS.filter((m) => m !== 'TRACE').map((m) => `${m === 'PROPFIND' ? 'other' : m} 200`),
        'TRACE 405',
        'GET 302',
        'POST 404',
        'GET 404',
        'GET 504',
      ].sort(),
    );
    const busy = series(await metricsText(s.proxy));
    // One request counter per (method, code) pair, one histogram per method; nothing else.
    expect(busy.length).toBe(idle.length + pairs.size + METHODS.length * HISTOGRAM_SERIES);
    expect(families(busy)).toEqual(
      new Set([...families(idle), 'ticket_auth_proxy_requests_total', 'ticket_auth_proxy_request_duration_seconds']),
    );
    process.stdout.write(
      `series per pod, essential profile, no store: idle ${idle.length}, after every method and status ${busy.length}\n`,
    );
  });

  test('idle, each added route adds at most 16 series: its token fetched, its gauges, the counters alerts watch', async ({
    stack,
    mock,
  }) => {
    const clients = { a: 'secret-a', b: 'secret-b', c: 'secret-c' };
    const gateway = await mock({ clients });
    const one = series(await metricsText((await stack({ gateway, clientId: 'a', secret: clients.a })).proxy));
    const file = join(mkdtempSync(join(tmpdir(), 'tap-series-')), 'proxy.yaml');
    const route = (name: keyof typeof clients, mount: string): string[] => [
      `  - name: ${name}`,
      ...(mount === '' ? [] : [`    mount: ${mount}`]),
      `    clientId: ${name}`,
      `    clientSecret: ${clients[name]}`,
    ];
    writeFileSync(file, ['routes:', ...route('a', ''), ...route('b', '/b'), ...route('c', '/c')].join('\n'));
    const three = await stack({
      gateway,
      clientId: 'a',
      secret: clients.a,
      env: { CONFIG_FILE: file },
      mustNotLeak: Object.values(clients),
    });
    const idle = series(await metricsText(three.proxy));
    // Each route holds a token of its own credential.
    expect(gateway.tokenRequests.map((t) => t.clientId).sort()).toEqual(['a', 'a', 'b', 'c']);
    for (const name of Object.keys(clients)) {
      expect(idle).toContain(`ticket_auth_proxy_token_fetches_total{route="${name}",outcome="success"} 1`);
    }
    const added = (idle.length - one.length) / 2;
    expect(added).toBeLessThanOrEqual(16);
    process.stdout.write(`series per pod, idle: one route ${one.length}, three routes ${idle.length}, ${added} per added route\n`);
  });

  test("METRICS_RUNTIME=full adds prom-client's full set; a token store adds its own families", async ({ stack }) => {
    const s = await stack({
      env: { METRICS_RUNTIME: 'full', TOKEN_STORE_URL: `redis://127.0.0.1:${await closedPort()}`, UPSTREAM_TIMEOUT_MS: '300' },
    });
    const idle = series(await metricsText(s.proxy));
    const names = families(idle);
    for (const name of [...PROXY_OWN_IDLE, ...ESSENTIALS]) expect(names.has(name), name).toBe(true);
    for (const name of ['nodejs_gc_duration_seconds', 'nodejs_heap_space_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(names.has(name), name).toBe(true);
    }
    for (const name of [
      'ticket_auth_proxy_token_store_up',
      'ticket_auth_proxy_token_store_operations_total',
      'ticket_auth_proxy_token_adoptions_total',
    ]) {
      expect(names.has(name), name).toBe(true);
    }
    expect([...names].filter((n) => /dpop|trace/.test(n))).toEqual([]);
    await traffic(s);
    const busy = series(await metricsText(s.proxy));
    // prom-client's own series come and go with the process (handles by type, GC kinds seen).
    expect(busy.length).toBeGreaterThan(idle.length);
    process.stdout.write(`series per pod, full profile, with a store: idle ${idle.length}, after every method and status ${busy.length}\n`);
  });
});
