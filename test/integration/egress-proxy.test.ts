import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { createCa, localhostCert, tempDir, type Ca, type Pem } from '../helpers/certs.js';
import { runCli, type ProxyHandle } from '../helpers/index.js';
import { test, untilReady, type StartMock, type StartStack } from '../helpers/stack.js';
import { startTinyproxy, type Tinyproxy } from '../helpers/tinyproxy.js';
import { lacks, skipNote } from '../helpers/tools.js';

const SECRET = `s-${randomBytes(6).toString('hex')}`;
const PROXY_USER = 'egress';
const PROXY_PASSWORD = `p-${randomBytes(6).toString('hex')}`;
/** Nothing of the egress proxy's credentials in any output: neither the password nor the Basic value. */
const PROXY_CREDENTIALS = [
  PROXY_PASSWORD,
  Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64'),
  /proxy-authorization: basic/i,
];
const files = tempDir();
let ca: Ca;
let server: Pem;
let caFile: string;

beforeAll(async () => {
  ca = await createCa('Private CA');
  server = await localhostCert(ca);
  caFile = files.write('ca.pem', ca.cert);
});
afterAll(() => files.remove());

/** The stack fixtures and `tinyproxy(options)`: a real tinyproxy, stopped when the test ends. */
// eslint-disable-next-line no-empty-pattern
const it = test.extend('tinyproxy', async ({}, { onCleanup }) => {
  const started: Tinyproxy[] = [];
  onCleanup(async () => {
    for (const t of started.splice(0)) await t.stop();
  });
  return async (options: Parameters<typeof startTinyproxy>[0] = {}): Promise<Tinyproxy> => {
    const t = await startTinyproxy(options);
    started.push(t);
    return t;
  };
});

function expectNoProxyCredentials(text: string): void {
  expect(text).not.toContain(PROXY_CREDENTIALS[0]);
  expect(text).not.toContain(PROXY_CREDENTIALS[1]);
  expect(text).not.toMatch(PROXY_CREDENTIALS[2]!);
}

function gateway(mock: StartMock, tls = true): Promise<MockTicketService> {
  return mock({ clients: { client: SECRET }, tokenTtlS: 600, ...(tls ? { tls: server } : {}) });
}

/** A proxy whose token endpoint is `g`; the stack's leak check covers its tokens, the secret and the egress proxy's credentials. */
async function proxyFor(stack: StartStack, g: MockTicketService, env: Record<string, string>): Promise<ProxyHandle> {
  return (await stack({ gateway: g, secret: SECRET, env: { CA_FILE: caFile, ...env }, ready: false, mustNotLeak: PROXY_CREDENTIALS }))
    .proxy;
}

const withCredentials = (t: Tinyproxy, password = PROXY_PASSWORD) => `http://${PROXY_USER}:${password}@127.0.0.1:${t.port}`;

describe.skipIf(lacks('tinyproxy'))(`an egress proxy, through a real tinyproxy${skipNote('tinyproxy')}`, () => {
  it('tunnels token fetches and forwarded requests with CONNECT, as tinyproxy logs them', async ({ mock, stack, tinyproxy }) => {
    const g = await gateway(mock);
    const t = await tinyproxy();
    const p = await proxyFor(stack, g, { BASE_URL: g.url, HTTPS_PROXY: t.url });
    await untilReady(p, 10_000);
    expect(t.count(`CONNECT 127.0.0.1:${g.port}`)).toBe(1);
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    // One tunnel for the token endpoint, one kept alive for the gateway.
    expect(t.count(`CONNECT 127.0.0.1:${g.port}`)).toBe(2);
    expect(g.apiRequests.every((r) => r.tokenValid)).toBe(true);
  });

  it('reads the lower-case http_proxy, and sends http: targets through it in absolute form', async ({ mock, stack, tinyproxy }) => {
    const g = await gateway(mock, false);
    const t = await tinyproxy();
    const p = await proxyFor(stack, g, { BASE_URL: g.url, http_proxy: t.url });
    await untilReady(p, 10_000);
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets?x=1`)).status).toBe(200);
    expect(t.count(`POST http://127.0.0.1:${g.port}/api/v1/oauth2/token`)).toBe(1);
    expect(t.count(`GET http://127.0.0.1:${g.port}/api/v1/tickets?x=1`)).toBe(1);
  });

  it("reads ISSUER_URL's metadata through the egress proxy of its scheme, as the token request", async ({ mock, stack, tinyproxy }) => {
    const secure = await gateway(mock);
    const forHttps = await tinyproxy();
    const forHttp = await tinyproxy();
    const proxies = { HTTPS_PROXY: forHttps.url, HTTP_PROXY: forHttp.url };
    const p = await proxyFor(stack, secure, { BASE_URL: secure.url, ISSUER_URL: secure.issuer.url, ...proxies });
    await untilReady(p, 10_000);
    expect(secure.issuer.requests).toEqual(['/.well-known/oauth-authorization-server']);
    expect(forHttps.count(`CONNECT 127.0.0.1:${secure.port}`)).toBeGreaterThanOrEqual(1);
    expect(forHttp.count(`127.0.0.1:${secure.port}`)).toBe(0);

    // A plain-http issuer: HTTP_PROXY in absolute form, never a tunnel through HTTPS_PROXY.
    const plain = await gateway(mock, false);
    const out = await runCli(['check'], {
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      BASE_URL: plain.url,
      ISSUER_URL: plain.issuer.url,
      ...proxies,
    });
    expect(out.code).toBe(0);
    expect(forHttp.count(`GET http://127.0.0.1:${plain.port}/.well-known/oauth-authorization-server`)).toBe(1);
    expect(forHttp.count(`POST http://127.0.0.1:${plain.port}/api/v1/oauth2/token`)).toBe(1);
    expect(forHttps.count(`127.0.0.1:${plain.port}`)).toBe(0);
  });

  it('goes direct for hosts in NO_PROXY', async ({ mock, stack, tinyproxy }) => {
    const g = await gateway(mock);
    const t = await tinyproxy();
    const p = await proxyFor(stack, g, { BASE_URL: g.url, HTTPS_PROXY: t.url, NO_PROXY: 'example.com, 127.0.0.1' });
    await untilReady(p, 10_000);
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(t.count('CONNECT 127.0.0.1')).toBe(0);
    expect(g.apiRequests).toHaveLength(1);
  });

  it('authenticates to a proxy that demands Basic credentials, sent to the proxy only', async ({ mock, stack, tinyproxy }) => {
    const g = await gateway(mock);
    const t = await tinyproxy({ basicAuth: { user: PROXY_USER, password: PROXY_PASSWORD } });
    const p = await proxyFor(stack, g, { BASE_URL: g.url, HTTPS_PROXY: withCredentials(t), LOG_LEVEL: 'trace', ACCESS_LOG: 'true' });
    await untilReady(p, 10_000);
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(t.count(`CONNECT 127.0.0.1:${g.port}`)).toBe(2);
    for (const r of [...g.apiRequests, ...g.tokenRequests])
      expect(JSON.stringify(r.headers).toLowerCase()).not.toContain('proxy-authorization');
    const out = await runCli(['check'], {
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      CA_FILE: caFile,
      BASE_URL: g.url,
      HTTPS_PROXY: withCredentials(t),
    });
    expect(out.code).toBe(0);
    expectNoProxyCredentials(out.stdout + out.stderr);
  });

  it('answers 502 naming the status when the proxy refuses the tunnel, and the token fetch is a network_error', async ({
    mock,
    stack,
    tinyproxy,
  }) => {
    const tokenEndpoint = await gateway(mock);
    const g = await gateway(mock);
    const t = await tinyproxy({ basicAuth: { user: PROXY_USER, password: PROXY_PASSWORD } });
    const wrong = withCredentials(t, 'wrong-password');
    // The token endpoint goes direct (NO_PROXY with its port): the gateway meets the refusal.
    const p = await proxyFor(stack, tokenEndpoint, {
      BASE_URL: g.url,
      TOKEN_URL: `${tokenEndpoint.url}/api/v1/oauth2/token`,
      HTTPS_PROXY: wrong,
      NO_PROXY: `127.0.0.1:${tokenEndpoint.port}`,
    });
    await untilReady(p, 10_000);
    const res = await fetch(`${p.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(502);
    const body = (await res.json()) as { code: string; detail: string };
    expect(body).toMatchObject({ code: 'upstream_unreachable' });
    // tinyproxy answers a CONNECT with wrong credentials 401 (other proxies 407): the status it sent.
    expect(body.detail).toMatch(/egress proxy refused: 40[17]/);
    expect(String((await p.waitForLog((l) => l.msg === 'forwarding failed', 5_000)).reason)).toMatch(/egress proxy refused: 40[17]/);
    expect(g.apiRequests).toHaveLength(0);

    const out = await runCli(['check'], {
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      CA_FILE: caFile,
      BASE_URL: g.url,
      HTTPS_PROXY: wrong,
    });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/network_error: .*egress proxy refused: 40[17]/);
    expect(out.stderr).not.toContain('wrong-password');
  });

  it('names 403 when the proxy refuses the port', async ({ mock, tinyproxy }) => {
    const g = await gateway(mock);
    const t = await tinyproxy({ extra: ['ConnectPort 443'] });
    const out = await runCli(['check'], {
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      CA_FILE: caFile,
      BASE_URL: g.url,
      HTTPS_PROXY: t.url,
    });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/network_error: .*egress proxy refused: 403/);
  });
});
