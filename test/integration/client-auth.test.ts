import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { SignJWT, exportJWK } from 'jose';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { pollUntil, runCli, type ProxyHandle } from '../helpers/index.js';
import { test as it, untilReady, type StartMock, type StartStack } from '../helpers/stack.js';

/** Anything that looks like a JWT or a PEM key must never reach the output (checked by the stack at teardown, with the mock's tokens). */
const LEAKS = [/eyJ[\w-]+\.eyJ/, /PRIVATE KEY/];

/** The current test's fixtures and its mock, for the helpers below. */
let current: { mock: StartMock; stack: StartStack; gateway?: MockTicketService };
it.beforeEach(({ mock, stack }) => {
  current = { mock, stack };
});

async function gateway(): Promise<MockTicketService> {
  current.gateway = await current.mock({ clients: {}, tokenTtlS: 600 });
  return current.gateway;
}

/** The proxy with exactly `env` (its credentials included), against the test's mock; returns once its listeners are up. */
async function proxy(env: Record<string, string>): Promise<ProxyHandle> {
  return (await current.stack({ gateway: current.gateway, credentials: false, env, ready: false, mustNotLeak: LEAKS })).proxy;
}
const dir = () => mkdtempSync(join(tmpdir(), 'tap-auth-'));

function keyPair(kind: 'rsa' | 'ec' | 'ed25519'): { privateKey: KeyObject; publicKey: KeyObject; pem: string } {
  const pair =
    kind === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : kind === 'ec'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : generateKeyPairSync('ed25519');
  return { ...pair, pem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

describe('private_key_jwt', () => {
  for (const kind of ['rsa', 'ec', 'ed25519'] as const) {
    it(`obtains a token with a ${kind} key and serves tickets, sending no secret and never printing the assertion`, async () => {
      const g = await gateway();
      const k = keyPair(kind);
      g.assertionClients.setPublicKey('client', k.publicKey);
      const d = dir();
      writeFileSync(join(d, 'key.pem'), k.pem);
      const p = await proxy({
        BASE_URL: g.url,
        CLIENT_ID: 'client',
        TOKEN_AUTH_METHOD: 'private_key_jwt',
        CLIENT_ASSERTION_KEY_FILE: join(d, 'key.pem'),
        LOG_LEVEL: 'trace',
      });
      await untilReady(p, 10_000);
      expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
      expect(g.tokenRequests[0]).toMatchObject({ clientId: 'client', authMethod: 'client_assertion' });
      expect(g.tokenRequests[0]!.form.map(([k]) => k)).toEqual(['grant_type', 'client_id', 'client_assertion_type']);
    });
  }

  it('fetches a token at once with a rotated key, which the gateway accepts', async () => {
    const g = await gateway();
    const [a, b] = [keyPair('ec'), keyPair('ec')];
    g.assertionClients.setPublicKey('client', a.publicKey);
    const d = dir();
    writeFileSync(join(d, 'key.pem'), a.pem);
    const p = await proxy({
      BASE_URL: g.url,
      CLIENT_ID: 'client',
      TOKEN_AUTH_METHOD: 'private_key_jwt',
      CLIENT_ASSERTION_KEY_FILE: join(d, 'key.pem'),
    });
    await untilReady(p, 10_000);
    g.assertionClients.setPublicKey('client', b.publicKey);
    writeFileSync(join(d, 'key.tmp'), b.pem);
    renameSync(join(d, 'key.tmp'), join(d, 'key.pem'));
    await pollUntil(() => g.tokenRequests.length === 2, { timeoutMs: 5000 });
    await p.waitForLog((l) => l.msg === 'token fetched' && p.lines().filter((x) => x.msg === 'token fetched').length === 2, 5000);
  });

  it('sends TOKEN_PARAMS with &, =, +, spaces and non-ASCII intact', async () => {
    const g = await gateway();
    g.setClientSecret('client', 'pw');
    const p = await proxy({
      BASE_URL: g.url,
      CLIENT_ID: 'client',
      CLIENT_SECRET: 'pw',
      TOKEN_PARAMS: 'audience=https%3A%2F%2Fapi%3Fa%3D1%26b&resource=a+b%2Bc&resource=Z%C3%BCrich',
    });
    await untilReady(p, 10_000);
    expect(g.tokenRequests[0]!.form.filter(([k]) => k === 'audience' || k === 'resource')).toEqual([
      ['audience', 'https://api?a=1&b'],
      ['resource', 'a b+c'],
      ['resource', 'Zürich'],
    ]);
  });
});

describe('client_assertion_file', () => {
  const issuer = 'https://cluster.local';
  const subject = 'system:serviceaccount:ns:app';
  const audience = 'ticket-gateway';

  async function federation() {
    const g = await gateway();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256' };
    g.assertionClients.setFederated('app', { issuer, subject, audience, jwks: { keys: [jwk] } });
    const sign = (expS: number) =>
      new SignJWT({ n: randomBytes(4).toString('hex') })
        .setProtectedHeader({ alg: 'ES256', kid: 'k' })
        .setIssuer(issuer)
        .setSubject(subject)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + expS)
        .sign(privateKey);
    // The kubelet's layout: token -> ..data/token, ..data -> a timestamped directory.
    const d = dir();
    let n = 0;
    const publish = (jwt: string): void => {
      const version = `..v${++n}`;
      mkdirSync(join(d, version));
      writeFileSync(join(d, version, 'token'), jwt);
      if (n === 1) {
        symlinkSync(version, join(d, '..data'));
        symlinkSync('..data/token', join(d, 'token'));
      } else {
        symlinkSync(version, join(d, '..data_tmp'));
        renameSync(join(d, '..data_tmp'), join(d, '..data'));
      }
    };
    const env = { BASE_URL: g.url, CLIENT_ID: 'app', TOKEN_AUTH_METHOD: 'client_assertion_file', CLIENT_ASSERTION_FILE: join(d, 'token') };
    return { g, sign, publish, env, file: join(d, 'token') };
  }

  it('gets a token from the file, and the forced refresh after a 401 carries the rotated assertion', async () => {
    const { g, sign, publish, env } = await federation();
    publish(await sign(600));
    const p = await proxy(env);
    await untilReady(p, 10_000);
    expect(g.tokenRequests[0]!.form.map(([k]) => k)).toEqual(['grant_type', 'client_id', 'client_assertion_type']);
    const first = g.tokenRequests[0]!.assertionSha256;
    publish(await sign(600));
    // The change is tried at once; then a 401 forces another fetch with the same new assertion.
    // Revoke only once the second token is issued and held: revoking earlier would leave it valid.
    await pollUntil(() => p.lines().filter((l) => l.msg === 'token fetched').length === 2, { timeoutMs: 5000 });
    expect(g.tokenRequests.length).toBe(2);
    g.revokeAll();
    expect((await fetch(`${p.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    expect(g.tokenRequests.length).toBe(3);
    expect(g.tokenRequests[2]!.assertionSha256).not.toBe(first);
    expect(g.tokenRequests[2]!.assertionSha256).toBe(g.tokenRequests[1]!.assertionSha256);
  });

  it('does not send an expired assertion, says so in the log and /readyz, and recovers when the file is rotated', async () => {
    const { g, sign, publish, env, file } = await federation();
    publish(await sign(-30));
    const p = await proxy(env);
    const line = await p.waitForLog((l) => l.msg === 'token fetch failed', 10_000);
    expect(line.reason).toMatch(new RegExp(`client assertion in ${file} expired at \\S+Z: the projected token is not being rotated`));
    expect(line.hint).toContain('a rotated file is tried at once');
    expect(line.hint).not.toContain('host name');
    const readyz = await fetch(`${p.adminUrl}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toContain(`client assertion in ${file} expired at`);
    expect(g.tokenRequests).toHaveLength(0);
    publish(await sign(600));
    await untilReady(p, 5000);
    expect(g.tokenRequests).toHaveLength(1);
  });

  it('check prints issuer, subject, audience and remaining life, and fails naming an expired or rejected assertion', async () => {
    const { g, sign, publish, env, file } = await federation();
    publish(await sign(600));
    const ok = await runCli(['check'], env);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(
      new RegExp(`client assertion in ${file}: issuer ${issuer}, subject ${subject}, audience ${audience}, (59\\d|600) s left`),
    );
    expect(ok.stdout).toContain('ok: token obtained');
    publish(await sign(-5));
    const expired = await runCli(['check'], env);
    expect(expired.code).toBe(1);
    expect(expired.stderr).toContain(`client assertion in ${file} expired at`);
    expect(expired.stderr).toContain('a rotated file is tried at once');
    expect(expired.stderr).not.toContain('host name');
    g.assertionClients.setFederated('app', { issuer: 'https://other', subject, audience, jwks: { keys: [] } });
    publish(await sign(600));
    const rejected = await runCli(['check'], env);
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toContain('rejected');
    for (const r of [ok, expired, rejected]) for (const leak of LEAKS) expect(r.stdout + r.stderr).not.toMatch(leak);
  });

  it('refuses to start when the file is missing, is not a JWT, or a secret is set as well, naming the settings', async () => {
    const { sign, publish, env, file } = await federation();
    const missing = await runCli([], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`CLIENT_ASSERTION_FILE names a file that cannot be read (ENOENT): ${file}`);
    publish('not a token');
    const junk = await runCli([], env);
    expect(junk.code).toBe(2);
    expect(junk.stderr).toContain('CLIENT_ASSERTION_FILE does not hold a compact JWT');
    publish(await sign(600));
    const both = await runCli([], { ...env, CLIENT_SECRET: 'pw' });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('CLIENT_SECRET and CLIENT_ASSERTION_FILE are both set');
  });
});
