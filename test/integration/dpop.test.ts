import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { describe, expect } from 'vitest';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, rawRequest, runCli } from '../helpers/index.js';
import { test as it, type Stack, type StackOptions, type StartStack } from '../helpers/stack.js';

/**
 * DPoP (RFC 9449) through the real process against the mock, whose token endpoint and API check
 * proofs strictly. Every proxy runs at trace level; the stack's teardown searches its output for
 * the tokens, and the checks below add every proof the mock saw and the private keys.
 */

/** Anything that looks like a JWT (a proof, an assertion) or a PEM private key. */
const LEAKS = [/eyJ[\w-]+\.eyJ/, /PRIVATE KEY/];

function pem(kind: 'ec' | 'ed25519' = 'ec'): { pem: string; d: string; jwk: JWK } {
  const pair = kind === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  const text = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const d = (pair.privateKey.export({ format: 'jwk' }) as { d: string }).d;
  return { pem: text, d, jwk: createPublicKey(text).export({ format: 'jwk' }) as JWK };
}

/** Every proof the mock received, for the leak check. */
function proofs(g: MockTicketService): string[] {
  const all = [...g.tokenRequests.map((r) => r.headers.dpop), ...g.apiRequests.map((r) => r.headers.dpop)];
  return all.flatMap((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]));
}

/** A stack at trace level with DPoP on; its teardown also looks for the proofs the mock saw. */
async function dpopStack(stack: StartStack, options: StackOptions & { dpop?: string } = {}): Promise<Stack> {
  const env = options.env;
  const s = await stack({
    ...options,
    env: (g) => ({ DPOP: options.dpop ?? 'on', LOG_LEVEL: 'trace', ...(typeof env === 'function' ? env(g) : env) }),
    mustNotLeak: [...LEAKS, ...(options.mustNotLeak ?? [])],
  });
  const stop = s.stop;
  s.stop = async () => {
    s.mustNotLeak(...proofs(s.gateway));
    await stop();
  };
  return s;
}

const tickets = (s: Stack, init?: RequestInit): Promise<Response> => fetch(`${s.proxy.proxyUrl}/api/v1/tickets`, init);

describe('DPoP at the token endpoint and the gateway', () => {
  it('binds the token to the proxy key and sends a proof with every gateway request', async ({ stack }) => {
    const s = await dpopStack(stack);
    const g = s.gateway;
    for (let i = 0; i < 3; i++) expect((await tickets(s)).status).toBe(200);
    const jkt = g.tokenRequests[0]!.dpop?.jkt;
    expect(g.tokenRequests[0]!.dpop).toEqual({ ok: true, jkt: expect.any(String) });
    const api = g.apiRequests.filter((r) => r.url === '/api/v1/tickets');
    expect(api).toHaveLength(3);
    for (const r of api) {
      expect(r.headers.authorization).toMatch(/^DPoP mock_/);
      expect(r.dpop).toEqual({ ok: true, jkt });
    }
    // One proof per request: three different ones.
    expect(new Set(api.map((r) => r.headers.dpop)).size).toBe(3);
    expect(await s.metric(/ticket_auth_proxy_dpop_proofs_total\{target="gateway"\} (\d+)/)).toBe(3);
    expect(await s.metric(/ticket_auth_proxy_dpop_proofs_total\{target="token"\} (\d+)/)).toBe(1);
  });

  it('meets a gateway that refuses the bound token presented as Bearer, and a proof sent twice', async ({ stack }) => {
    const s = await dpopStack(stack);
    const g = s.gateway;
    expect((await tickets(s)).status).toBe(200);
    const seen = g.apiRequests[0]!;
    const token = String(seen.headers.authorization).slice('DPoP '.length);
    const proof = String(seen.headers.dpop);
    const direct = (path: string, headers: Record<string, string>) => fetch(`${g.url}${path}`, { headers });
    const asBearer = await direct('/api/v1/tickets', { authorization: `Bearer ${token}` });
    expect(asBearer.status).toBe(401);
    expect(asBearer.headers.get('www-authenticate')).toMatch(/^DPoP error="/);
    const replayed = await direct('/api/v1/tickets', { authorization: `DPoP ${token}`, dpop: proof });
    expect(replayed.headers.get('www-authenticate')).toContain('invalid_dpop_proof');
    expect(replayed.status).toBe(401);
    expect(g.apiRequests.map((r) => r.dpop?.error ?? 'ok')).toEqual(['ok', 'invalid_dpop_proof', 'invalid_dpop_proof']);
  });

  it('signs the path as it goes on the request line, raw characters raw, behind a path prefix', async ({ stack }) => {
    const s = await dpopStack(stack, { mock: { pathPrefix: '/gw' } });
    // Raw characters URL parsers percent-encode, each Node version its own set; escapes as sent.
    const targets = ['/api/v1/t/a^b', '/api/v1/t/{x}|"y"`z`<>', '/api/v1/t/[1]', "/api/v1/t/%7e!$&'()*+,;=:@", '/api/v1/t/%c3%a9?q=^{}'];
    for (const target of targets) {
      const res = await rawRequest(s.proxy.proxyPort, `GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      // The mock's 404 for a path it has no route for comes after the proof passed; a refused proof is a 401.
      expect(res).toMatch(/^HTTP\/1\.1 404 /);
    }
    const seen = s.gateway.apiRequests.filter((r) => r.url.startsWith('/gw/api/v1/t/'));
    expect(seen.map((r) => r.url)).toEqual(targets.map((t) => `/gw${t}`));
    for (const r of seen) expect(r.dpop).toEqual({ ok: true, jkt: expect.any(String) });
  });

  it("does not forward a caller's own DPoP header beside the proxy's proof", async ({ stack }) => {
    const s = await dpopStack(stack);
    expect((await tickets(s, { headers: { dpop: 'caller.proof.value' } })).status).toBe(200);
    expect(s.gateway.apiRequests.at(-1)!.dpop?.ok).toBe(true);
  });

  it('answers the nonce demands of the token endpoint and of the gateway, then sends the nonces it was given', async ({ stack }) => {
    const s = await dpopStack(stack, { mock: { dpop: { tokenNonce: true, gatewayNonce: true } } });
    const g = s.gateway;
    expect(g.tokenRequests.map((r) => r.dpop?.error ?? 'ok')).toEqual(['use_dpop_nonce', 'ok']);
    expect((await tickets(s)).status).toBe(200);
    expect((await tickets(s)).status).toBe(200);
    expect(g.apiRequests.map((r) => r.dpop?.error ?? 'ok')).toEqual(['use_dpop_nonce', 'ok', 'ok']);
    expect(g.tokenRequests).toHaveLength(2);
    expect(await s.metric(/ticket_auth_proxy_dpop_nonce_requests_total\{target="token"\} (\d+)/)).toBe(1);
    expect(await s.metric(/ticket_auth_proxy_dpop_nonce_requests_total\{target="gateway"\} (\d+)/)).toBe(1);
    expect(await s.metric(/ticket_auth_proxy_token_fetches_total\{route="default",outcome="success"\} (\d+)/)).toBe(1);
    expect(await s.metric(/ticket_auth_proxy_token_fetches_total\{route="default",outcome="rejected"\} (\d+)/)).toBe(0);
    expect(await s.metric(/ticket_auth_proxy_upstream_unauthorized_total\{route="default",replayed="true"\} (\d+)/)).toBe(0);
  });

  it("replays a POST once, body and all, with a new proof carrying the gateway's new nonce, keeping the token", async ({ stack }) => {
    const s = await dpopStack(stack, { mock: { dpop: { gatewayNonce: true } } });
    const g = s.gateway;
    expect((await tickets(s)).status).toBe(200);
    g.dpop.gateway.rotateNonce();
    const body = 'x'.repeat(5000);
    const res = await fetch(`${s.proxy.proxyUrl}/api/v1/upload`, { method: 'POST', body });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { length: number }).length).toBe(5000);
    const uploads = g.apiRequests.filter((r) => r.url === '/api/v1/upload');
    expect(uploads.map((r) => [r.dpop?.error ?? 'ok', r.bodyLength])).toEqual([
      ['use_dpop_nonce', 5000],
      ['ok', 5000],
    ]);
    expect(uploads[0]!.headers.dpop).not.toBe(uploads[1]!.headers.dpop);
    expect(uploads[0]!.headers.authorization).toBe(uploads[1]!.headers.authorization);
    expect(g.tokenRequests).toHaveLength(1);
  });

  it('passes the nonce demand of a body too large to replay to the caller, and uses its nonce for the next request', async ({ stack }) => {
    const s = await dpopStack(stack, { env: { REPLAY_BODY_LIMIT_BYTES: '1000' }, mock: { dpop: { gatewayNonce: true } } });
    const g = s.gateway;
    expect((await tickets(s)).status).toBe(200);
    g.dpop.gateway.rotateNonce();
    const res = await fetch(`${s.proxy.proxyUrl}/api/v1/upload`, { method: 'POST', body: 'y'.repeat(5000) });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('use_dpop_nonce');
    const before = g.apiRequests.length;
    expect((await tickets(s)).status).toBe(200);
    expect(g.apiRequests.slice(before).map((r) => r.dpop?.error ?? 'ok')).toEqual(['ok']);
    expect(g.tokenRequests).toHaveLength(1);
  });

  it('passes a second nonce demand in a row to the caller, without dropping the token', async ({ stack }) => {
    const s = await dpopStack(stack, { mock: { dpop: { gatewayNonce: true } } });
    const g = s.gateway;
    expect((await tickets(s)).status).toBe(200);
    // Every proof is now refused for its nonce: the one replay, then the caller gets the 401.
    const rotate = (): void => void g.dpop.gateway.rotateNonce();
    g.events.on('request', rotate);
    rotate();
    const before = g.apiRequests.length;
    const res = await tickets(s);
    g.events.off('request', rotate);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('use_dpop_nonce');
    expect(g.apiRequests.slice(before).map((r) => r.dpop?.error)).toEqual(['use_dpop_nonce', 'use_dpop_nonce']);
    expect(g.tokenRequests).toHaveLength(1);
  });

  it('refetches and replays with a proof for the new token after an invalid_token 401', async ({ stack }) => {
    const s = await dpopStack(stack);
    const g = s.gateway;
    expect((await tickets(s)).status).toBe(200);
    g.revokeAll();
    expect((await tickets(s)).status).toBe(200);
    expect(g.tokenRequests).toHaveLength(2);
    const [, refused, replayed] = g.apiRequests;
    expect(refused!.tokenValid).toBe(false);
    expect(replayed!.dpop?.ok).toBe(true);
    expect(replayed!.headers.authorization).not.toBe(refused!.headers.authorization);
  });

  for (const method of ['client_secret_post', 'client_secret_basic', 'client_secret_jwt'] as const) {
    it(`sends a proof with ${method}`, async ({ stack }) => {
      const s = await dpopStack(stack, { env: { TOKEN_AUTH_METHOD: method } });
      expect((await tickets(s)).status).toBe(200);
      expect(s.gateway.tokenRequests[0]!.dpop?.ok).toBe(true);
      expect(s.gateway.apiRequests[0]!.dpop?.ok).toBe(true);
    });
  }

  it('sends a proof with private_key_jwt, the assertion and the proof signed by different keys', async ({ stack, mock }) => {
    const g = await mock({ clients: {} });
    const assertion = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    g.assertionClients.setPublicKey('client', assertion.publicKey);
    const dir = mkdtempSync(join(tmpdir(), 'tap-dpop-'));
    writeFileSync(join(dir, 'assertion.pem'), assertion.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    const s = await dpopStack(stack, {
      gateway: g,
      credentials: false,
      env: { CLIENT_ID: 'client', TOKEN_AUTH_METHOD: 'private_key_jwt', CLIENT_ASSERTION_KEY_FILE: join(dir, 'assertion.pem') },
    });
    expect((await tickets(s)).status).toBe(200);
    expect(g.tokenRequests[0]).toMatchObject({ authMethod: 'client_assertion', dpop: { ok: true } });
    expect(g.apiRequests[0]!.dpop?.ok).toBe(true);
  });

  it("binds pass-through credentials' tokens to the same key", async ({ stack, mock }) => {
    const g = await mock({ clients: { a: 'secret-a', b: 'secret-b' } });
    const s = await dpopStack(stack, {
      gateway: g,
      credentials: false,
      env: { PASSTHROUGH_BASIC: 'true' },
      mustNotLeak: ['secret-a', 'secret-b'],
    });
    for (const [id, secret] of [
      ['a', 'secret-a'],
      ['b', 'secret-b'],
    ]) {
      const res = await tickets(s, { headers: { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` } });
      expect(res.status).toBe(200);
    }
    const jkts = g.tokenRequests.map((r) => r.dpop?.jkt);
    expect(jkts).toHaveLength(2);
    expect(jkts[0]).toBeDefined();
    expect(jkts[1]).toBe(jkts[0]);
    expect(g.apiRequests.map((r) => r.dpop?.ok)).toEqual([true, true]);
  });
});

describe('DPoP against an identity provider that answers Bearer', () => {
  it('DPOP=on uses the Bearer token as Bearer and says so once', async ({ stack }) => {
    const s = await dpopStack(stack, { mock: { dpop: { bearerOnly: true } } });
    expect((await tickets(s)).status).toBe(200);
    expect((await tickets(s)).status).toBe(200);
    expect(s.gateway.apiRequests.map((r) => /^Bearer /.test(String(r.headers.authorization)) && r.headers.dpop === undefined)).toEqual([
      true,
      true,
    ]);
    expect(s.proxy.lines().filter((l) => /answered a DPoP token request with a Bearer token/.test(String(l.msg)))).toHaveLength(1);
    const check = await runCli(['check'], { BASE_URL: s.gateway.url, CLIENT_ID: s.clientId, CLIENT_SECRET: s.secret, DPOP: 'on' });
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('token type: Bearer');
  });

  it('DPOP=required refuses the Bearer answer: /readyz and check fail naming DPOP', async ({ stack }) => {
    const s = await dpopStack(stack, { dpop: 'required', ready: false, mock: { dpop: { bearerOnly: true } } });
    let body = '';
    await pollUntil(
      async () => {
        const res = await fetch(`${s.proxy.adminUrl}/readyz`);
        body = await res.text();
        return res.status === 503 && body.includes('invalid_response');
      },
      { timeoutMs: 10_000 },
    );
    expect(body).toContain('DPOP=required');
    expect((await tickets(s)).status).toBe(503);
    expect(s.proxy.lines().some((l) => l.outcome === 'invalid_response' && /DPOP/.test(String(l.hint)))).toBe(true);
    const check = await runCli(['check'], { BASE_URL: s.gateway.url, CLIENT_ID: s.clientId, CLIENT_SECRET: s.secret, DPOP: 'required' });
    expect(check.code).toBe(1);
    expect(check.stderr).toContain('invalid_response');
    expect(check.stderr).toContain('DPOP=required');
    expect(check.stderr).toContain('DPOP=on');
  });
});

describe('the DPoP key', () => {
  it('check prints the key thumbprint the token is bound to, and the DPoP token type', async ({ mock }) => {
    const g = await mock({ clients: { client: 'sek' } });
    const key = pem('ed25519');
    const dir = mkdtempSync(join(tmpdir(), 'tap-dpop-'));
    writeFileSync(join(dir, 'dpop.pem'), key.pem);
    const jkt = await calculateJwkThumbprint(key.jwk, 'sha256');
    const check = await runCli(['check'], {
      BASE_URL: g.url,
      CLIENT_ID: 'client',
      CLIENT_SECRET: 'sek',
      DPOP: 'on',
      DPOP_KEY_FILE: join(dir, 'dpop.pem'),
    });
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(`DPoP: on, proofs signed EdDSA, key thumbprint (RFC 7638) ${jkt}`);
    expect(check.stdout).toContain(`token type: DPoP (bound to the key ${jkt})`);
    expect(g.tokenRequests[0]!.dpop?.jkt).toBe(jkt);
    const out = check.stdout + check.stderr;
    for (const secret of [key.pem, key.d, ...proofs(g), ...g.issuedTokens()]) expect(out.includes(secret)).toBe(false);
  });

  it('a new key file fetches a token bound to the new key at once, used from then on', async ({ stack }) => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-dpop-'));
    const file = join(dir, 'dpop.pem');
    const [a, b] = [pem(), pem()];
    writeFileSync(file, a.pem);
    const s = await dpopStack(stack, { env: { DPOP_KEY_FILE: file }, mustNotLeak: [a.pem, a.d, b.pem, b.d] });
    const g = s.gateway;
    const [jktA, jktB] = [await calculateJwkThumbprint(a.jwk, 'sha256'), await calculateJwkThumbprint(b.jwk, 'sha256')];
    expect((await tickets(s)).status).toBe(200);
    expect(g.apiRequests[0]!.dpop?.jkt).toBe(jktA);
    writeFileSync(join(dir, 'next.pem'), b.pem);
    renameSync(join(dir, 'next.pem'), file);
    await pollUntil(() => g.tokenRequests.some((r) => r.dpop?.jkt === jktB), { timeoutMs: 10_000 });
    await pollUntil(async () => (await tickets(s)).status === 200 && g.apiRequests.at(-1)!.dpop?.jkt === jktB, { timeoutMs: 10_000 });
    expect(s.proxy.lines().some((l) => l.msg === 'DPoP key replaced' && l.thumbprint === jktB)).toBe(true);
  });
});
