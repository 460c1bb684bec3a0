import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/log.js';
import { CREDENTIALS_REQUIRED, type Authorizer } from '../../src/proxy/authorizer.js';
import { createForwarder } from '../../src/proxy/forward.js';
import { DEFAULT_PATHS } from '../../src/proxy/path-guard.js';
import { SeenHeaderNames } from '../../src/proxy/response-headers.js';
import type { Route } from '../../src/proxy/route.js';
import { type LoadShedding, NEVER_SHED } from '../../src/overload/overload-guard.js';
import { NO_BUDGET, type ReadBudget } from '../../src/overload/read-budget.js';
import { Recorder, type ProxyObserver } from '../../src/proxy/recorder.js';
import { dpopGateway } from '../../src/token/dpop/index.js';
import { createProxyServer } from '../../src/proxy/server.js';
import { createStalledCallers } from '../../src/proxy/stalled-callers.js';
import { systemClock } from '../../src/core/clock.js';
import { StopList } from '../../src/app/shutdown.js';
import type { Authorization } from '../../src/token/held-token.js';
import { pollUntil } from '../helpers/index.js';
import { startRawGateway } from '../helpers/raw-gateway.js';

/**
 * The request path in one process: the proxy listener and forwarder as the app wires them, a
 * gateway on loopback, a token source that hands out `t1`, then `t2` once `t1` is rejected.
 */

interface Seen {
  authorization: string | undefined;
  body: string;
  /** The DPoP proof, when one was sent. */
  dpop?: string;
}

/** What the observer was told, in order. */
type Event = ['ended', string, number] | ['unauthorized', boolean] | ['stalled', string] | ['shed'] | ['reset'];

function fakeSource(): Authorizer & { invalidated: string[] } {
  let token = 't1';
  const invalidated: string[] = [];
  const auth = () => ({ token, header: `Bearer ${token}` });
  return {
    invalidated,
    authorization: auth,
    authorize: () => Promise.resolve(auth()),
    invalidate(t: string) {
      invalidated.push(t);
      if (t === token) token = token === 't1' ? 't2' : 't3';
      return true;
    },
  };
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function listening(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as AddressInfo).port;
}

/** What the gateway answers: a status, or a status with headers. */
type GatewayAnswer = number | { status: number; headers: Record<string, string> };

/** Starts a gateway answering with `answer` and a proxy in front of it. */
async function stack(options: {
  answer: (seen: Seen, n: number) => GatewayAnswer;
  configured?: boolean;
  replayLimit?: number;
  source?: Authorizer;
  budget?: ReadBudget;
  load?: LoadShedding;
}) {
  const seen: Seen[] = [];
  const gateway = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = { authorization: req.headers.authorization, body: Buffer.concat(chunks).toString() };
      if (req.headers.dpop !== undefined) Object.assign(s, { dpop: req.headers.dpop });
      seen.push(s);
      const answer = options.answer(s, seen.length);
      const { status, headers } = typeof answer === 'number' ? { status: answer, headers: {} } : answer;
      res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(`gateway ${status}`);
    });
  });
  gateway.keepAliveTimeout = 100;
  const origin = `http://127.0.0.1:${await listening(gateway)}`;
  return { seen, ...(await proxyFor(origin, options)) };
}

/**
 * A proxy in front of the gateway at `origin`, with a fake token source handing out `t1`, then
 * `t2` once `t1` is rejected (or `source`). Retries go on connections of their own, as in the app.
 */
async function proxyFor(
  origin: string,
  options: { configured?: boolean; replayLimit?: number; source?: Authorizer; budget?: ReadBudget; load?: LoadShedding },
) {
  const pool = new Pool(origin);
  const freshPool = new Pool(origin, { pipelining: 0 });
  closers.push(
    () => pool.destroy(),
    () => freshPool.destroy(),
  );
  const events: Event[] = [];
  const observer: ProxyObserver = {
    requestEnded: (method, status) => events.push(['ended', method, status]),
    upstreamUnauthorized: (replayed) => events.push(['unauthorized', replayed]),
    upstreamStalled: (direction) => events.push(['stalled', direction]),
    requestShed: () => events.push(['shed']),
    exchangeReset: () => events.push(['reset']),
  };
  const source = fakeSource();
  const recorder = new Recorder({ route: 'default', observer, log: createLogger('silent'), accessLog: false });
  const route: Route = {
    name: 'default',
    paths: DEFAULT_PATHS,
    baseUrl: origin,
    basePath: '',
    connections: { origin, pool, fresh: freshPool },
    dpop: dpopGateway(origin),
    authorizer: options.configured === false ? CREDENTIALS_REQUIRED : (options.source ?? source),
    passthrough: undefined,
    upstreamTimeoutMs: 5_000,
    upstreamIdleTimeoutMs: 60_000,
    replayBodyLimitBytes: options.replayLimit ?? 1024,
    seenNames: new SeenHeaderNames(),
    recorder,
  };
  const forward = createForwarder({
    routes: { mounts: [], main: route },
    budget: options.budget ?? NO_BUDGET,
    load: options.load ?? NEVER_SHED,
    recorder,
    callers: createStalledCallers({ clock: systemClock }),
    log: createLogger('silent'),
    listenOrigin: 'http://127.0.0.1',
  });
  const proxy = createProxyServer({ forward, recorder, log: createLogger('silent'), maxHeaderBytes: 16_384 });
  const port = await listening(proxy);
  return { events, source, port };
}

interface Answer {
  status: number;
  body: string;
}

/** One request to the proxy; `chunks` are written one by one (chunked encoding). */
function send(port: number, method: string, path: string, headers: Record<string, string> = {}, chunks: string[] = []): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { connection: 'close', ...headers } }, (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

describe('the refusals', () => {
  it('meet a request in order, the choice of credential last, and none reaches the gateway', async () => {
    const s = await stack({ answer: () => 200, configured: false });
    // TRACE is refused before its target is looked at.
    expect((await send(s.port, 'TRACE', '/elsewhere')).status).toBe(405);
    // An upgrade is refused before its target is looked at.
    const upgrade = await send(s.port, 'GET', '/elsewhere', { connection: 'upgrade', upgrade: 'websocket' });
    expect(upgrade.body).toContain('upgrade_not_supported');
    // The target is refused before the missing credential is.
    expect((await send(s.port, 'GET', '/elsewhere')).body).toContain('not_proxied');
    const noCredential = await send(s.port, 'GET', '/api/v1/tickets');
    expect(noCredential.status).toBe(401);
    expect(noCredential.body).toContain('credentials_required');
    expect(s.seen).toEqual([]);
    expect(s.events.map((e) => e.slice(0, 2))).toEqual([
      ['ended', 'TRACE'],
      ['ended', 'GET'],
      ['ended', 'GET'],
      ['ended', 'GET'],
    ]);
  });

  it('refuses CONNECT at the listener, reported once', async () => {
    const s = await stack({ answer: () => 200 });
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: s.port, method: 'CONNECT', path: 'example.com:443' });
      req.on('connect', (res: IncomingMessage, socket) => {
        socket.destroy();
        resolve(res.statusCode!);
      });
      req.on('response', (res: IncomingMessage) => resolve(res.statusCode!));
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(405);
    expect(s.events).toEqual([['ended', 'CONNECT', 405]]);
    expect(s.seen).toEqual([]);
  });
});

describe('memory', () => {
  it('sheds a new request with 503 overloaded and Retry-After: 1 while memory is near its limit, forwarding nothing', async () => {
    const load = { shedding: true };
    const s = await stack({ answer: () => 200, load });
    const shed = await fetch(`http://127.0.0.1:${s.port}/api/v1/tickets`);
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(((await shed.json()) as { code: string }).code).toBe('overloaded');
    expect(s.seen).toEqual([]);
    // Once memory has fallen, the next request is served.
    load.shedding = false;
    expect(await send(s.port, 'GET', '/api/v1/tickets')).toEqual({ status: 200, body: 'gateway 200' });
    expect(s.events).toEqual([['shed'], ['ended', 'GET', 503], ['ended', 'GET', 200]]);
  });

  it("reports every body byte it reads to the read budget: the caller's upload and the gateway's answer", async () => {
    let read = 0;
    const s = await stack({ answer: () => 200, budget: { spend: (bytes) => (read += bytes) } });
    const answer = await send(s.port, 'POST', '/api/v1/tickets', { 'content-type': 'text/plain' }, ['first,', 'second']);
    expect(answer).toEqual({ status: 200, body: 'gateway 200' });
    expect(s.seen).toEqual([{ authorization: 'Bearer t1', body: 'first,second' }]);
    expect(read).toBe('first,second'.length + 'gateway 200'.length);
  });
});

describe('the replay after a gateway 401', () => {
  it('sends a small streamed body again, byte for byte, with the new token', async () => {
    const s = await stack({ answer: (seen) => (seen.authorization === 'Bearer t1' ? 401 : 200) });
    const answer = await send(s.port, 'POST', '/api/v1/tickets', { 'content-type': 'text/plain' }, ['first,', 'second']);
    expect(answer).toEqual({ status: 200, body: 'gateway 200' });
    expect(s.seen).toEqual([
      { authorization: 'Bearer t1', body: 'first,second' },
      { authorization: 'Bearer t2', body: 'first,second' },
    ]);
    expect(s.events).toEqual([
      ['unauthorized', true],
      ['ended', 'POST', 200],
    ]);
  });

  it('replays once at most: a second 401 goes to the caller', async () => {
    const s = await stack({ answer: () => 401 });
    expect(await send(s.port, 'GET', '/api/v1/tickets')).toEqual({ status: 401, body: 'gateway 401' });
    expect(s.seen.map((x) => x.authorization)).toEqual(['Bearer t1', 'Bearer t2']);
    expect(s.events).toEqual([
      ['unauthorized', true],
      ['unauthorized', false],
      ['ended', 'GET', 401],
    ]);
  });

  it('passes the 401 on when the streamed body outgrew the copy, and still drops the token', async () => {
    const s = await stack({ answer: () => 401, replayLimit: 8 });
    const answer = await send(s.port, 'POST', '/api/v1/tickets', {}, ['0123456', '789']);
    expect(answer).toEqual({ status: 401, body: 'gateway 401' });
    expect(s.seen).toHaveLength(1);
    expect(s.source.invalidated).toEqual(['t1']);
    expect(s.events).toEqual([
      ['unauthorized', false],
      ['ended', 'POST', 401],
    ]);
  });
});

/**
 * A source of DPoP-bound tokens (`t1`, then `t2` once `t1` is rejected): each send gets a numbered
 * proof, and the gateway's `use_dpop_nonce` 401 is a nonce demand.
 */
function dpopSource(): Authorizer {
  let proofs = 0;
  const bound = (token: string): Authorization => ({
    token,
    header: `DPoP ${token}`,
    proof: (method, target) => `proof-${++proofs} ${method} ${target}`,
    answered: (_gateway, status, headers) => status === 401 && headers['www-authenticate'] === 'DPoP error="use_dpop_nonce"',
  });
  let held = bound('t1');
  return {
    authorization: () => held,
    authorize: () => Promise.resolve(held),
    invalidate(token) {
      if (token === held.token) held = bound('t2');
      return true;
    },
  };
}

describe('the replay after a DPoP nonce demand', () => {
  it('sends the same body with a new proof, then again with a new token after a 401 for the token, byte for byte each time', async () => {
    const demand = { status: 401, headers: { 'www-authenticate': 'DPoP error="use_dpop_nonce"', 'dpop-nonce': 'n-1' } };
    const s = await stack({ source: dpopSource(), answer: (_seen, n) => (n === 1 ? demand : n === 2 ? 401 : 200) });
    const answer = await send(s.port, 'POST', '/api/v1/tickets', { 'content-type': 'text/plain' }, ['first,', 'second']);
    expect(answer).toEqual({ status: 200, body: 'gateway 200' });
    expect(s.seen).toEqual([
      { authorization: 'DPoP t1', body: 'first,second', dpop: 'proof-1 POST /api/v1/tickets' },
      { authorization: 'DPoP t1', body: 'first,second', dpop: 'proof-2 POST /api/v1/tickets' },
      { authorization: 'DPoP t2', body: 'first,second', dpop: 'proof-3 POST /api/v1/tickets' },
    ]);
    // A nonce demand refuses no token: only the 401 for the token is counted.
    expect(s.events).toEqual([
      ['unauthorized', true],
      ['ended', 'POST', 200],
    ]);
  });
});

describe('the replay and the retry in one request', () => {
  it('retries a replay whose connection broke before any answer on a new connection, body and all', async () => {
    let broken = false;
    const g = await startRawGateway({
      act: (r) => {
        if (r.headers.authorization === 'Bearer t1') return { answer: 401 };
        if (broken) return { answer: 200 };
        broken = true;
        return { close: true };
      },
    });
    closers.push(() => g.close());
    const s = await proxyFor(g.url, {});
    const body = '{"id":"r-1"}';
    const headers = { 'content-length': String(body.length), 'idempotency-key': 'k-1' };
    expect(await send(s.port, 'PUT', '/api/v1/tickets/1', headers, [body])).toEqual({ status: 200, body: 'gateway 200' });
    expect(g.seen.map((r) => [r.headers.authorization, r.body, r.headers['idempotency-key']])).toEqual([
      ['Bearer t1', body, 'k-1'],
      ['Bearer t2', body, 'k-1'],
      ['Bearer t2', body, 'k-1'],
    ]);
    expect(g.seen[2]!.onConnection).toBe(1);
    expect(s.events).toEqual([
      ['unauthorized', true],
      ['ended', 'PUT', 200],
    ]);
  });

  it('replays the 401 that meets a retried GET, once, on a new connection', async () => {
    // The first connection answers once and closes under its second request.
    const g = await startRawGateway({
      act: (r) => {
        if (r.connection === 1) return r.onConnection === 1 ? { answer: 200 } : { close: true };
        return { answer: r.headers.authorization === 'Bearer t1' ? 401 : 200 };
      },
    });
    closers.push(() => g.close());
    const s = await proxyFor(g.url, {});
    expect((await send(s.port, 'GET', '/api/v1/warm')).status).toBe(200);
    expect(await send(s.port, 'GET', '/api/v1/tickets')).toEqual({ status: 200, body: 'gateway 200' });
    expect(g.seen.filter((r) => r.path === '/api/v1/tickets').map((r) => [r.headers.authorization, r.connection, r.onConnection])).toEqual([
      ['Bearer t1', 1, 2],
      ['Bearer t1', 2, 1],
      ['Bearer t2', 3, 1],
    ]);
    expect(s.events).toEqual([
      ['ended', 'GET', 200],
      ['unauthorized', true],
      ['ended', 'GET', 200],
    ]);
  });
});

describe('a caller that leaves during a replay', () => {
  it('is recorded once, as 499, and its request is not sent again when the new token comes', async () => {
    // A source that drops a rejected token and hands out the next only when told to.
    let held: Authorization | undefined = { token: 't1', header: 'Bearer t1' };
    const waiting: ((auth: Authorization) => void)[] = [];
    const source: Authorizer = {
      authorization: () => held,
      authorize: () => (held !== undefined ? Promise.resolve(held) : new Promise((resolve) => waiting.push(resolve))),
      invalidate(token) {
        if (token === held?.token) held = undefined;
        return true;
      },
    };
    const s = await stack({ source, answer: (seen) => (seen.authorization === 'Bearer t1' ? 401 : 200) });
    const leaving = request({ host: '127.0.0.1', port: s.port, method: 'GET', path: '/api/v1/tickets' });
    leaving.on('error', () => {});
    leaving.end();
    await pollUntil(() => waiting.length === 1, { timeoutMs: 5_000 });
    leaving.destroy();
    await pollUntil(() => s.events.length === 2, { timeoutMs: 5_000 });
    held = { token: 't2', header: 'Bearer t2' };
    for (const resolve of waiting.splice(0)) resolve(held);
    // The replay, had it been sent, was on its way before this request.
    expect(await send(s.port, 'GET', '/api/v1/later')).toEqual({ status: 200, body: 'gateway 200' });
    expect(s.seen.map((x) => x.authorization)).toEqual(['Bearer t1', 'Bearer t2']);
    expect(s.events).toEqual([
      ['unauthorized', true],
      ['ended', 'GET', 499],
      ['ended', 'GET', 200],
    ]);
  });
});

describe('StopList', () => {
  it('stops the parts last registered first, each once', async () => {
    const stops = new StopList();
    const order: string[] = [];
    stops.add(() => {
      order.push('connections');
    });
    stops.add(undefined);
    stops.add(async () => {
      await Promise.resolve();
      order.push('token source');
    });
    stops.add(() => {
      order.push('watcher');
    });
    await stops.stopAll();
    await stops.stopAll();
    expect(order).toEqual(['watcher', 'token source', 'connections']);
  });
});
