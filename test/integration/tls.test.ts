import { randomBytes } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import type { MockTicketService, MockTls } from '../../src/mock/ticket-service.js';
import { clientCert, createCa, expiredCert, localhostCert, tempDir, wrongHostCert, type Ca, type Pem } from '../helpers/certs.js';
import { pollUntil, runCli, type ProxyHandle } from '../helpers/index.js';
import { test as it, untilReady, type StartMock, type StartStack } from '../helpers/stack.js';

const SECRET = `s-${randomBytes(6).toString('hex')}`;
const files = tempDir();
let ca: Ca;
let server: Pem;

beforeAll(async () => {
  ca = await createCa('Private CA');
  server = await localhostCert(ca);
});
afterAll(() => files.remove());

/** A mock serving HTTPS with `tls`, closed when the test ends. */
function gateway(mock: StartMock, tls: MockTls): Promise<MockTicketService> {
  return mock({ clients: { client: SECRET }, tokenTtlS: 600, tls });
}

/** A proxy whose token endpoint is `g` (the stack's leak check covers its tokens); returns once its listeners are up. */
async function proxyFor(stack: StartStack, g: MockTicketService, env: Record<string, string>): Promise<ProxyHandle> {
  return (await stack({ gateway: g, secret: SECRET, env, ready: false })).proxy;
}

const check = (env: Record<string, string>) => runCli(['check'], { CLIENT_ID: 'client', CLIENT_SECRET: SECRET, ...env });

describe('HTTPS to the gateway and the token endpoint', () => {
  it('fetches tokens and forwards over TLS when CA_FILE names the private CA', async ({ mock, stack }) => {
    const g = await gateway(mock, server);
    const p = await proxyFor(stack, g, { BASE_URL: g.url, CA_FILE: files.write('ca.pem', ca.cert) });
    await untilReady(p, 10_000);
    const res = await fetch(`${p.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { tickets: unknown[] }).tickets.length).toBeGreaterThan(0);
    expect(g.tokenRequests).toHaveLength(1);
    expect(g.apiRequests[0]).toMatchObject({ tokenValid: true });
    // Keep-alive holds over TLS: one handshake for the token endpoint, one for the gateway.
    for (let i = 0; i < 20; i++) expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(g.handshakes()).toBe(2);
  });

  it('refuses a private CA it was not given: 503 token_unavailable, the reason in the log and in check', async ({ mock, stack }) => {
    const g = await gateway(mock, server);
    const p = await proxyFor(stack, g, { BASE_URL: g.url, TOKEN_WAIT_TIMEOUT_MS: '300' });
    const failed = await p.waitForLog((l) => l.msg === 'token fetch failed', 10_000);
    expect(failed).toMatchObject({ outcome: 'network_error' });
    expect(String(failed.reason)).toContain('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    const readyz = await fetch(`${p.adminUrl}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toMatch(/network_error: .*UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
    const res = await fetch(`${p.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { code: string }).code).toBe('token_unavailable');
    expect(g.tokenRequests).toHaveLength(0);

    const out = await check({ BASE_URL: g.url });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/network_error: .*UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
  });

  it.for([
    ['a certificate for another host', wrongHostCert, 'ERR_TLS_CERT_ALTNAME_INVALID'],
    ['an expired certificate', expiredCert, 'CERT_HAS_EXPIRED'],
  ] as const)('answers 502 naming the reason when the gateway presents %s', async ([_what, make, reason], { mock, stack }) => {
    const tokenEndpoint = await gateway(mock, server);
    const bad = await gateway(mock, await make(ca));
    const caFile = files.write('ca.pem', ca.cert);
    const p = await proxyFor(stack, tokenEndpoint, {
      BASE_URL: bad.url,
      TOKEN_URL: `${tokenEndpoint.url}/api/v1/oauth2/token`,
      CA_FILE: caFile,
    });
    await untilReady(p, 10_000);
    const res = await fetch(`${p.proxyUrl}/api/v1/tickets`);
    expect(res.status).toBe(502);
    const body = (await res.json()) as { code: string; detail: string };
    expect(body.code).toBe('upstream_unreachable');
    expect(body.detail).toContain(reason);
    const logged = await p.waitForLog((l) => l.msg === 'forwarding failed', 5_000);
    expect(String(logged.reason)).toContain(reason);
    expect(bad.apiRequests).toHaveLength(0);

    const out = await check({ BASE_URL: bad.url, CA_FILE: caFile });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(reason);
  });
});

describe('TLS files at start', () => {
  it('refuses to start with an unreadable CA_FILE or a certificate without its key, naming the settings', async () => {
    const out = await runCli([], {
      BASE_URL: 'https://127.0.0.1:1',
      CLIENT_ID: 'client',
      CLIENT_SECRET: SECRET,
      CA_FILE: '/nonexistent/ca.pem',
      TLS_CLIENT_CERT_FILE: files.write('lonely.crt', server.cert),
    });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('CA_FILE names a file that cannot be read (ENOENT): /nonexistent/ca.pem');
    expect(out.stderr).toContain('TLS_CLIENT_CERT_FILE is set without TLS_CLIENT_KEY_FILE');
    expect(out.stdout).not.toContain('listeners up');
  });
});

describe('client certificates', () => {
  it('presents the client certificate to a server that requires one, and fails naming the reason without it', async ({ mock, stack }) => {
    const clientCa = await createCa('Client CA');
    const mine = await clientCert(clientCa);
    const g = await gateway(mock, { ...server, ca: clientCa.cert, requestCert: true });
    const caFile = files.write('ca.pem', ca.cert);

    const without = await check({ BASE_URL: g.url, CA_FILE: caFile });
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/network_error: .*(CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|requires a client certificate)/);

    const env = {
      BASE_URL: g.url,
      CA_FILE: caFile,
      TLS_CLIENT_CERT_FILE: files.write('client.crt', mine.cert),
      TLS_CLIENT_KEY_FILE: files.write('client.key', mine.key),
    };
    const withCert = await check(env);
    expect(withCert.stderr).toBe('');
    expect(withCert.code).toBe(0);
    const p = await proxyFor(stack, g, env);
    await untilReady(p, 10_000);
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(p.output()).not.toContain(mine.key.split('\n')[1]!);
  });
});

describe('rotation without a restart', () => {
  /** Replaces a file as Kubernetes and editors do: write aside, rename over. */
  const replace = (path: string, text: string): void => {
    writeFileSync(`${path}.new`, text);
    renameSync(`${path}.new`, path);
  };

  it('uses a rotated CA_FILE for new connections while a request in flight finishes on its own', async ({ mock, stack }) => {
    const g = await gateway(mock, server);
    const caFile = files.write('rotating-ca.pem', ca.cert);
    const p = await proxyFor(stack, g, { BASE_URL: g.url, CA_FILE: caFile });
    await untilReady(p, 10_000);
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);

    // A request in flight while the CA file changes finishes on its connection.
    const next = await createCa('Next CA');
    const inFlight = fetch(`${p.proxyUrl}/api/v1/slow?ms=2500`);
    await pollUntil(() => g.apiRequests.some((r) => r.url.includes('/slow')), { timeoutMs: 5_000 });
    replace(caFile, ca.cert + next.cert);
    await p.waitForLog((l) => l.msg === 'CA_FILE changed', 5_000);
    expect((await inFlight).status).toBe(200);

    g.setTls(await localhostCert(next));
    g.dropConnections();
    replace(caFile, next.cert);
    await pollUntil(() => p.lines().filter((l) => l.msg === 'CA_FILE changed').length === 2, { timeoutMs: 5_000 });
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);

    replace(caFile, 'not a certificate\n');
    const bad = await p.waitForLog((l) => l.msg === 'CA_FILE is not usable; keeping the current one', 5_000);
    expect(bad).toMatchObject({ path: caFile });
    g.dropConnections();
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
  });

  it('uses a rotated client certificate for new connections and fetches a token with it at once', async ({ mock, stack }) => {
    const clientCa = await createCa('Client CA');
    const first = await clientCert(clientCa);
    const g = await gateway(mock, { ...server, ca: clientCa.cert, requestCert: true });
    const certFile = files.write('tls.crt', first.cert);
    const keyFile = files.write('tls.key', first.key);
    const p = await proxyFor(stack, g, {
      BASE_URL: g.url,
      CA_FILE: files.write('ca.pem', ca.cert),
      TLS_CLIENT_CERT_FILE: certFile,
      TLS_CLIENT_KEY_FILE: keyFile,
    });
    await untilReady(p, 10_000);
    expect(g.tokenRequests).toHaveLength(1);

    const nextCa = await createCa('Next client CA');
    const second = await clientCert(nextCa);
    g.setTls({ ...server, ca: nextCa.cert, requestCert: true });
    g.dropConnections();
    replace(keyFile, second.key);
    replace(certFile, second.cert);
    await p.waitForLog((l) => l.msg === 'TLS_CLIENT_CERT_FILE/TLS_CLIENT_KEY_FILE changed', 5_000);
    await pollUntil(() => g.tokenRequests.length === 2, { timeoutMs: 5_000 });
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
  });
});
