/**
 * Routes (docs/routes.md), from outside: one proxy in front of two gateways, each its own
 * identity provider (two embedded mocks on loopback), one route mounted on the main listener
 * (`/eu`), the other on a Unix socket of its own. Every `Authorization` each gateway receives is
 * recorded: a route's token goes to its own gateway alone, whatever the traffic, a 401 and its
 * replay on one route touch nothing of the other, and one identity provider's outage leaves the
 * other route answering 200.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterEach, describe, expect } from 'vitest';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, runCli, startProxy, type ProxyHandle } from '../helpers/index.js';
import { expectNoLeak, metricsText, test } from '../helpers/stack.js';

const EU_SECRET = 'eu-secret-!@#';
const US_SECRET = 'us-secret-$%^';

interface Routed {
  eu: MockTicketService;
  us: MockTicketService;
  proxy: ProxyHandle;
  /** A request to the eu route, through the main listener's mount. */
  viaEu(
    path: string,
    init?: { method?: string; body?: string },
  ): Promise<{ status: number; body: string; headers: Record<string, unknown> }>;
  /** A request to the us route, on its own socket. */
  viaUs(path: string): Promise<{ status: number; body: string }>;
}

const started: { proxy: ProxyHandle; eu: MockTicketService; us: MockTicketService; socket: Agent }[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) {
    await s.proxy.stop();
    await s.socket.close();
    const tokens = [...s.eu.issuedTokens(), ...s.us.issuedTokens()];
    expectNoLeak(s.proxy.output(), [
      ['the eu secret', EU_SECRET],
      ['the us secret', US_SECRET],
      ...tokens.map((t): [string, string] => ['a token the mocks issued', t]),
    ]);
  }
});

/** Two mocks and a proxy with the two routes, ready. */
async function routed(mock: (options?: object) => Promise<MockTicketService>, extra: string = ''): Promise<Routed> {
  const eu = await mock({ clients: { 'eu-app': EU_SECRET } });
  const us = await mock({ clients: { 'us-app': US_SECRET } });
  const dir = mkdtempSync(join(tmpdir(), 'tap-routes-'));
  writeFileSync(join(dir, 'us-secret'), `${US_SECRET}\n`);
  const socketPath = join(dir, 'us.sock');
  const file = join(dir, 'proxy.yaml');
  writeFileSync(
    file,
    [
      'tokenWaitTimeoutMs: 1500',
      'routes:',
      '  - name: eu',
      '    mount: /eu',
      `    baseUrl: ${eu.url}`,
      '    clientId: eu-app',
      `    clientSecret: "${EU_SECRET}"`,
      '  - name: us',
      `    listenSocket: ${socketPath}`,
      `    baseUrl: ${us.url}`,
      '    clientId: us-app',
      `    clientSecretFile: ${join(dir, 'us-secret')}`,
      extra,
    ].join('\n'),
  );
  const proxy = await startProxy({ CONFIG_FILE: file });
  const socket = new Agent({ connect: { socketPath } });
  started.push({ proxy, eu, us, socket });
  await pollUntil(async () => (await fetch(`${proxy.adminUrl}/readyz`)).status === 200, { timeoutMs: 15_000 });
  return {
    eu,
    us,
    proxy,
    async viaEu(path, init = {}) {
      const res = await request(`${proxy.proxyUrl}/eu${path}`, { method: (init.method ?? 'GET') as 'GET', body: init.body });
      return { status: res.statusCode, body: await res.body.text(), headers: res.headers };
    },
    async viaUs(path) {
      const res = await request(`http://localhost${path}`, { dispatcher: socket });
      return { status: res.statusCode, body: await res.body.text() };
    },
  };
}

/** Every `Authorization` a gateway received on its API, and whether each is a token that gateway issued. */
function authorizations(gateway: MockTicketService): { own: number; foreign: string[] } {
  const issued = new Set(gateway.issuedTokens());
  const sent = gateway.apiRequests.map((r) => String(r.headers.authorization ?? '').replace(/^Bearer /, ''));
  return { own: sent.filter((t) => issued.has(t)).length, foreign: sent.filter((t) => !issued.has(t)) };
}

describe('two gateways behind one proxy, each with its own credential', () => {
  test('sends each route only to its own gateway, with its own token, across mixed traffic', async ({ mock }) => {
    const r = await routed(mock);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? r.viaEu('/api/v1/tickets') : r.viaUs('/api/v1/tickets'))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(authorizations(r.eu)).toEqual({ own: 10, foreign: [] });
    expect(authorizations(r.us)).toEqual({ own: 10, foreign: [] });
    // The mount is removed before forwarding: the eu gateway sees its own path space.
    expect(r.eu.apiRequests.map((a) => a.url)).toEqual(Array.from({ length: 10 }, () => '/api/v1/tickets'));
    expect(r.eu.tokenRequests.map((t) => t.clientId)).toEqual(['eu-app']);
    expect(r.us.tokenRequests.map((t) => t.clientId)).toEqual(['us-app']);
  });

  test('replays a 401 on one route with a new token of its own, and the other route fetches nothing', async ({ mock }) => {
    const r = await routed(mock);
    expect((await r.viaUs('/api/v1/tickets')).status).toBe(200);
    r.eu.revokeAll();
    expect((await r.viaEu('/api/v1/upload', { method: 'POST', body: 'x' })).status).toBe(200);
    expect(r.eu.tokenRequests).toHaveLength(2);
    expect(r.us.tokenRequests).toHaveLength(1);
    // The refused token and the new one, both the eu identity provider's; the us gateway saw its own alone.
    expect(r.eu.apiRequests.map((a) => a.tokenValid)).toEqual([false, true]);
    expect(authorizations(r.eu)).toEqual({ own: 2, foreign: [] });
    expect(authorizations(r.us)).toEqual({ own: 1, foreign: [] });
    expect(await metricsText(r.proxy)).toMatch(/^ticket_auth_proxy_upstream_unauthorized_total\{route="eu",replayed="true"\} 1$/m);
  });

  test("answers the other route 200 throughout one identity provider's outage", async ({ mock }) => {
    const r = await routed(mock);
    r.eu.setTokenFault({ status: 503, times: Infinity });
    r.eu.revokeAll();
    // The eu route's token is refused, and no new one can be had.
    const refused = await r.viaEu('/api/v1/tickets');
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'token_unavailable' });
    const during = await Promise.all(Array.from({ length: 10 }, () => r.viaUs('/api/v1/tickets')));
    expect(during.map((a) => a.status)).toEqual(Array.from({ length: 10 }, () => 200));
    expect(authorizations(r.us)).toEqual({ own: 10, foreign: [] });
    const ready = (await (await fetch(`${r.proxy.adminUrl}/readyz`)).json()) as { routes: Record<string, { ready: boolean }> };
    expect(ready.routes).toEqual({ eu: expect.objectContaining({ ready: false }), us: { ready: true } });
  });

  test('refuses what no route takes and what a route does not forward, naming the paths that are', async ({ mock }) => {
    const r = await routed(mock);
    const nowhere = await request(`${r.proxy.proxyUrl}/api/v1/tickets`);
    expect(nowhere.statusCode).toBe(404);
    expect(JSON.parse(await nowhere.body.text())).toMatchObject({ code: 'not_proxied', detail: expect.stringContaining('/eu/') });
    const outside = await r.viaEu('/api/v2/tickets');
    expect(outside.status).toBe(404);
    expect(JSON.parse(outside.body)).toMatchObject({ code: 'not_proxied', detail: 'only paths under /api/v1/ are forwarded' });
    expect(await r.viaEu('x')).toMatchObject({ status: 404 });
    expect(r.eu.apiRequests).toEqual([]);
  });

  test("puts the mount back in front of a Location into the route's gateway", async ({ mock }) => {
    const r = await routed(mock);
    const relative = await r.viaEu(`/api/v1/redirect?to=${encodeURIComponent('/api/v1/tickets?page=2')}`);
    expect(relative.status).toBe(302);
    expect(relative.headers.location).toBe('/eu/api/v1/tickets?page=2');
    const absolute = await r.viaEu(`/api/v1/redirect?to=${encodeURIComponent(`${r.eu.url}/api/v1/tickets`)}`);
    expect(absolute.headers.location).toBe(`${r.proxy.proxyUrl}/eu/api/v1/tickets`);
  });

  test('forwards the paths a route names: /api/v2 beside /api/v1', async ({ mock }) => {
    const r = await routed(mock, '    paths: [/api/v1, /api/v2]');
    await r.viaUs('/api/v2/tickets');
    expect(r.us.apiRequests.map((a) => a.url)).toEqual(['/api/v2/tickets']);
    expect(r.us.apiRequests[0]!.headers.authorization).toMatch(/^Bearer /);
    expect((await r.viaUs('/api/v2/oauth2/token')).status).toBe(404);
    expect(r.us.apiRequests).toHaveLength(1);
  });

  test('counts each route under its name, and says each route is ready', async ({ mock }) => {
    const r = await routed(mock);
    await r.viaEu('/api/v1/tickets');
    await r.viaUs('/api/v1/tickets');
    await r.viaUs('/api/v1/tickets');
    const text = await metricsText(r.proxy);
    expect(text).toMatch(/^ticket_auth_proxy_requests_total\{route="eu",method="GET",code="200"\} 1$/m);
    expect(text).toMatch(/^ticket_auth_proxy_requests_total\{route="us",method="GET",code="200"\} 2$/m);
    expect(text).toMatch(/^ticket_auth_proxy_token_fetches_total\{route="eu",outcome="success"\} 1$/m);
    expect(text).toMatch(/^ticket_auth_proxy_token_fetches_total\{route="us",outcome="success"\} 1$/m);
    expect(text).toMatch(/^ticket_auth_proxy_token_expiry_timestamp_seconds\{route="us"\} \d/m);
    const ready = (await (await fetch(`${r.proxy.adminUrl}/readyz`)).json()) as object;
    expect(ready).toEqual({ status: 'ready', routes: { eu: { ready: true }, us: { ready: true } } });
  });
});

/** A configuration file of `lines` in a directory of its own; its path. */
function configFile(lines: string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'tap-routes-check-')), 'proxy.yaml');
  writeFileSync(file, lines.join('\n'));
  return file;
}

describe('check and the start with routes', () => {
  test("prints one line per route ending with its result, fetches a shared credential once, and exits 1 when a route's fails", async ({
    mock,
  }) => {
    const eu = await mock({ clients: { 'eu-app': EU_SECRET } });
    const us = await mock({ clients: { 'us-app': US_SECRET } });
    const file = configFile([
      'routes:',
      '  - name: eu',
      '    mount: /eu',
      `    baseUrl: ${eu.url}`,
      '    clientId: eu-app',
      `    clientSecret: "${EU_SECRET}"`,
      '  - name: eu-v2',
      '    mount: /eu2',
      `    baseUrl: ${eu.url}`,
      '    paths: [/api/v2]',
      '    clientId: eu-app',
      `    clientSecret: "${EU_SECRET}"`,
      '  - name: us',
      `    baseUrl: ${us.url}`,
      '    clientId: us-app',
      '    clientSecret: "not-the-us-secret"',
    ]);
    const out = await runCli(['check'], { CONFIG_FILE: file });
    expect(out.code, out.stderr).toBe(1);
    // The last line of each route: its result.
    const results = out.stdout.split('\n').filter((l) => /^(eu|eu-v2|us): (ok$|failed: |the same credential)/.test(l));
    expect(results).toEqual([
      'eu: ok',
      'eu-v2: the same credential as "eu": ok',
      expect.stringMatching(/^us: failed: rejected: token endpoint answered 401 invalid_client/),
    ]);
    // Every line of a route's account begins with its name.
    for (const line of out.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('listeners:'))) {
      expect(line, out.stdout).toMatch(/^(eu|eu-v2|us): /);
    }
    expect(eu.tokenRequests).toHaveLength(1);
    expect(us.tokenRequests).toHaveLength(1);
    expectNoLeak(out.stdout + out.stderr, [
      ['the eu secret', EU_SECRET],
      ['the us secret', 'not-the-us-secret'],
    ]);
  });

  test("warns, naming the route, when a route's own port is held by another process", async ({ mock }) => {
    const eu = await mock({ clients: { 'eu-app': EU_SECRET } });
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const file = configFile([
        'routes:',
        '  - name: eu',
        `    listenPort: ${port}`,
        `    baseUrl: ${eu.url}`,
        '    clientId: eu-app',
        `    clientSecret: "${EU_SECRET}"`,
      ]);
      const out = await runCli(['check'], { CONFIG_FILE: file });
      expect(out.stderr).toContain(`warning: route "eu"'s listener (its listenHost, listenPort) cannot listen on 127.0.0.1:${port}`);
      const started = await runCli([], { CONFIG_FILE: file, LISTEN_PORT: '0', ADMIN_PORT: '0' });
      expect(started.code).not.toBe(0);
      expect(started.stderr + started.stdout).toContain(`route "eu"'s listener`);
    } finally {
      holder.close();
    }
  });

  test('refuses every conflict of the routes in one message naming each route, at start and in check alike, with no secret', async ({
    mock,
  }) => {
    const eu = await mock({ clients: { 'eu-app': EU_SECRET } });
    const file = configFile([
      `clientSecret: "${EU_SECRET}"`,
      'clientId: eu-app',
      'routes:',
      '  - name: eu',
      '    mount: /eu',
      `    baseUrl: ${eu.url}`,
      '  - name: eu-inner',
      '    mount: /eu/inner',
      `    baseUrl: ${eu.url}`,
      '  - name: Bad_Name',
      `    baseUrl: ${eu.url}`,
      '    mount: /bad',
      '  - name: nobase',
      '    mount: /nobase',
      '  - name: two-ways',
      '    mount: /two',
      '    listenPort: 18999',
      `    baseUrl: ${eu.url}`,
    ]);
    const [start, check] = await Promise.all([runCli([], { CONFIG_FILE: file }), runCli(['check'], { CONFIG_FILE: file })]);
    expect(start.code).toBe(2);
    expect(check.code).toBe(2);
    expect(check.stderr).toBe(start.stderr);
    expect(start.stdout).not.toContain('listeners up');
    for (const name of ['eu-inner', 'nobase', 'two-ways']) expect(start.stderr).toContain(`"${name}"`);
    // A name outside the form is named by its place in the list.
    expect(start.stderr).toContain('route 3 in');
    expect(start.stderr).toMatch(/^ticket-auth-proxy: invalid configuration \(\d problems\):/);
    expect(eu.tokenRequests).toEqual([]);
    expectNoLeak(start.stderr + start.stdout, [['the eu secret', EU_SECRET]]);
  });
});
