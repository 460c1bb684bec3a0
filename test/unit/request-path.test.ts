import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/log.js';
import type { Authorizer } from '../../src/proxy/exchange.js';
import { createForwarder, createSourceSelector } from '../../src/proxy/forward.js';
import { Recorder, type ProxyObserver } from '../../src/proxy/observer.js';
import { createProxyServer } from '../../src/proxy/server.js';
import { StopList } from '../../src/app/shutdown.js';

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
type Event = ['ended', string, number] | ['unauthorized', boolean] | ['stalled', string];

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
async function proxyFor(origin: string, options: { configured?: boolean; replayLimit?: number; source?: Authorizer }) {
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
  };
  const source = fakeSource();
  const recorder = new Recorder(observer, createLogger('silent'), false);
  const forward = createForwarder({
    pool,
    freshPool,
    baseUrl: origin,
    selectSource: createSourceSelector(options.configured === false ? undefined : (options.source ?? source), undefined),
    upstreamTimeoutMs: 5_000,
    upstreamIdleTimeoutMs: 60_000,
    replayBodyLimitBytes: options.replayLimit ?? 1024,
    recorder,
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
