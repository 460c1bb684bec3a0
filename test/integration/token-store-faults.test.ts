/**
 * Proxies sharing tokens through a real redis-server (standalone, a user limited to the prefix)
 * when something goes wrong: entries overwritten with garbage, the store killed and restarted
 * mid-traffic, a store that accepts and never answers, a closed port, a wrong password, a
 * rotated secret; and pass-through credentials shared the same way. The store is never needed
 * to serve: no request fails because of it.
 */
import { writeFileSync } from 'node:fs';
import type { Redis } from 'iovalkey';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import {
  failures,
  firstTokens,
  freshPrefix,
  sharedFetchBound,
  sinceFirstFetch,
  startFleet,
  storeEnv,
  STORE_USER,
  traffic,
  writeFile,
} from '../helpers/fleet.js';
import { closedPort, pollUntil, runCli } from '../helpers/index.js';
import { adminClient, dumpStore, type RedisTarget } from '../helpers/redis-harness.js';
import { aclRules, blackHole, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { functionLibrary, LIBRARY_NAME } from '../../src/store/scripts.js';
import { metricsText, test as it } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const TTL_S = 3;
const CLIENT = 'fleet-client';
const SECRET = 'fleet-secret-91c0aa';
const ADOPTIONS = /ticket_auth_proxy_token_adoptions_total (\S+)/;
/** A deadline that only stops a test that hangs. */
const HUNG_MS = 20_000;
const STORE_UP = /ticket_auth_proxy_token_store_up (\S+)/;

// Each test starts a fleet and serves it for a token lifetime or more: a minute and a half stops
// one that hangs, not one a busy machine slows.
describe.skipIf(lacks('redis-server') || lacks('redis-cli'))(
  `a token store that goes wrong${skipNote('redis-server')}`,
  { timeout: 90_000 },
  () => {
    let server: RedisServer;
    let target: RedisTarget;
    let admin: Redis;
    beforeAll(async () => {
      server = await startRedis({ user: STORE_USER });
      target = { url: `redis://${STORE_USER.name}@127.0.0.1:${server.port}`, mode: 'standalone', password: STORE_USER.password };
      admin = adminClient(target) as Redis;
      // The administrator's client meets the store killed too; its reconnects are not this test's.
      admin.on('error', () => undefined);
    });
    afterAll(async () => {
      admin?.disconnect();
      await server?.stop();
    });

    it('serves through entries overwritten with garbage, never takes them, and replaces them with the next fetch', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: TTL_S });
      const prefix = freshPrefix();
      const fleet = await startFleet(stack, gateway, 3, { clientId: CLIENT, secret: SECRET, env: storeEnv(target, prefix) });
      const [entry] = (await dumpStore(admin, prefix)).filter((k) => k.key.endsWith('}'));
      await admin.hset(entry!.key, {
        exp: String(Date.now() + 60_000),
        fp: 'f'.repeat(64),
        ct: Buffer.from('not a token').toString('base64'),
      });
      // Past the refresh moment (70-80 % of the lifetime), when the garbage is read.
      expect(failures(await traffic(fleet, 1.2 * TTL_S * 1000))).toEqual({});
      const invalid = await Promise.all(
        fleet.map((s) => s.metric(/ticket_auth_proxy_token_store_operations_total\{operation="read",result="invalid"\} (\S+)/)),
      );
      expect(invalid.reduce((a, b) => a + b)).toBeGreaterThan(0);
      const [replaced] = (await dumpStore(admin, prefix)).filter((k) => k.key.endsWith('}'));
      expect((replaced!.value as Record<string, string>).fp).not.toBe('f'.repeat(64));
      // Sharing goes on: one fetch a refresh for the three, not three, over the time that passed.
      const fetchedFirst = (await firstTokens(fleet)).filter((how) => how === 'fetched').length;
      expect(gateway.tokenRequests.length - fetchedFirst).toBeLessThanOrEqual(sharedFetchBound(sinceFirstFetch(gateway), TTL_S));
    });

    it('fails no request while the store is killed and restarted on the same port, and shares again once it is back', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: TTL_S });
      const fleet = await startFleet(stack, gateway, 3, { clientId: CLIENT, secret: SECRET, env: storeEnv(target, freshPrefix()) });
      let stop = false;
      const running = (async () => {
        const statuses = new Map<number, number>();
        while (!stop) for (const [status, n] of await traffic(fleet, 200)) statuses.set(status, (statuses.get(status) ?? 0) + n);
        return statuses;
      })();
      await server.kill();
      // Down: a proxy that finds it so fetches alone when it must: a refresh comes while it is down.
      const beforeDown = gateway.tokenRequests.length;
      await pollUntil(async () => (await Promise.all(fleet.map((s) => s.metric(STORE_UP)))).includes(0), { timeoutMs: HUNG_MS });
      await pollUntil(() => gateway.tokenRequests.length > beforeDown, { timeoutMs: HUNG_MS });
      await server.restart();
      // Served throughout, and for a while after it is back.
      await traffic(fleet, TTL_S * 1000);
      stop = true;
      expect(failures(await running)).toEqual({});
      const adoptedBefore = await Promise.all(fleet.map((s) => s.metric(ADOPTIONS)));
      // A background check finds it again; then a refresh is taken from the store rather than fetched.
      await pollUntil(
        async () => {
          await traffic(fleet, 200);
          const adopted = await Promise.all(fleet.map((s) => s.metric(ADOPTIONS)));
          return adopted.some((n, i) => n > adoptedBefore[i]!);
        },
        { timeoutMs: HUNG_MS, intervalMs: 200 },
      );
      for (const s of fleet)
        expect(s.proxy.lines().filter((l) => l.msg?.startsWith('token store unavailable')).length).toBeLessThanOrEqual(2);
    });

    it('starts and serves with a store that accepts connections and never answers, waiting one store timeout', async ({ mock, stack }) => {
      const hole = await blackHole();
      try {
        const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 60 });
        const [s] = await startFleet(stack, gateway, 1, {
          clientId: CLIENT,
          secret: SECRET,
          env: { TOKEN_STORE_URL: `redis://127.0.0.1:${hole.port}`, TOKEN_STORE_TIMEOUT_MS: '300' },
        });
        expect(hole.connections()).toBeGreaterThan(0);
        expect(failures(await traffic([s!], 300))).toEqual({});
        expect(await s!.metric(STORE_UP)).toBe(0);
        // One store timeout, then the store counts as down and the proxy fetches alone: one
        // operation timed out, none after it waited for the store, and the fetch came after the warning.
        const operations = /ticket_auth_proxy_token_store_operations_total\{operation="(\w+)",result="timeout"\} (\d+)/g;
        const timedOut = [...(await metricsText(s!.proxy)).matchAll(operations)].filter((m) => m[2] !== '0').map((m) => `${m[1]} ${m[2]}`);
        expect(timedOut).toEqual(['read 1']);
        const events = s!.proxy
          .lines()
          .map((l) => String(l.msg))
          .filter((m) => m.startsWith('token store unavailable') || m === 'token fetched');
        expect(events).toEqual([expect.stringMatching(/^token store unavailable/), 'token fetched']);
        expect(s!.proxy.lines().filter((l) => l.level === 40 && String(l.msg).startsWith('token store unavailable'))).toHaveLength(1);
      } finally {
        await hole.close();
      }
    });

    it('starts and serves with a store on a closed port, and says so once', async ({ mock, stack }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 60 });
      const [s] = await startFleet(stack, gateway, 1, {
        clientId: CLIENT,
        secret: SECRET,
        env: { TOKEN_STORE_URL: `redis://127.0.0.1:${await closedPort()}` },
      });
      expect(failures(await traffic([s!], 300))).toEqual({});
      expect(gateway.tokenRequests).toHaveLength(1);
      const warned = s!.proxy.lines().filter((l) => String(l.msg).startsWith('token store unavailable'));
      expect(warned).toHaveLength(1);
      expect(JSON.stringify(warned[0])).toContain('TOKEN_STORE_URL');
    });

    it('serves with a wrong store password, logs an error naming the setting, and check exits 1 naming it', async ({ mock, stack }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 60 });
      const env = { ...storeEnv({ ...target, password: 'not-the-password' }, freshPrefix()) };
      const [s] = await startFleet(stack, gateway, 1, { clientId: CLIENT, secret: SECRET, env });
      s!.mustNotLeak('not-the-password', STORE_USER.password);
      expect(failures(await traffic([s!], 300))).toEqual({});
      const refused = s!.proxy.lines().filter((l) => l.level === 50 && String(l.msg).startsWith('token store unavailable'));
      expect(refused).toHaveLength(1);
      expect(JSON.stringify(refused[0])).toContain('TOKEN_STORE_PASSWORD_FILE');

      const base = { BASE_URL: gateway.url, CLIENT_ID: CLIENT, CLIENT_SECRET: SECRET };
      const wrong = await runCli(['check'], { ...base, ...env });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain('TOKEN_STORE_PASSWORD_FILE');
      expect(wrong.stdout + wrong.stderr).not.toContain('not-the-password');
      // With the right one: reachable, and holding the token the proxy above could not share (none).
      const right = await runCli(['check'], { ...base, ...storeEnv(target, freshPrefix()) });
      expect(right.code).toBe(0);
      expect(right.stdout).toContain('password accepted');
      expect(right.stdout).toContain('holds no usable token for this credential');
    });

    it('names a store user without STRLEN and HSTRLEN (an ACL line from an earlier release) in an error at start and in check, and serves', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 60 });
      const old = { name: 'ticket-proxy-earlier', password: 'earlier-store-password' };
      const rules = aclRules(STORE_USER.prefix).filter((r) => r !== '+strlen' && r !== '+hstrlen');
      await admin.call('ACL', 'SETUSER', old.name, 'reset', 'on', `>${old.password}`, ...rules);
      const env = storeEnv({ ...target, url: `redis://${old.name}@127.0.0.1:${server.port}`, password: old.password }, freshPrefix());
      const [s] = await startFleet(stack, gateway, 1, { clientId: CLIENT, secret: SECRET, env });
      expect(failures(await traffic([s!], 300))).toEqual({});
      const named = s!.proxy.lines().filter((l) => l.level === 50 && /STRLEN or HSTRLEN/.test(JSON.stringify(l)));
      expect(named).toHaveLength(1);
      expect(JSON.stringify(named[0])).toContain('+strlen +hstrlen');
      const checked = await runCli(['check'], { BASE_URL: gateway.url, CLIENT_ID: CLIENT, CLIENT_SECRET: SECRET, ...env });
      expect(checked.code).toBe(1);
      expect(checked.stderr).toContain('+strlen +hstrlen');
    });

    it('refuses a function library loaded from an earlier release, in an error at start and in check, and serves', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 60 });
      const user = { name: 'ticket-proxy-functions', password: 'functions-store-password' };
      await admin.call('ACL', 'SETUSER', user.name, 'reset', 'on', `>${user.password}`, ...aclRules(STORE_USER.prefix, false, 'functions'));
      // The library as the earlier release printed it: its version function answered the key format's version alone.
      const earlier = functionLibrary().replace(
        /callback=function\(\) return \{'(v\d+)', \d+\} end/,
        "callback=function() return '$1' end",
      );
      expect(earlier).not.toBe(functionLibrary());
      await admin.call('FUNCTION', 'LOAD', 'REPLACE', earlier);
      try {
        const env: Record<string, string> = {
          ...storeEnv({ ...target, url: `redis://${user.name}@127.0.0.1:${server.port}`, password: user.password }, freshPrefix()),
          TOKEN_STORE_SCRIPTS: 'functions',
        };
        const [s] = await startFleet(stack, gateway, 1, { clientId: CLIENT, secret: SECRET, env });
        expect(failures(await traffic([s!], 300))).toEqual({});
        const refused = s!.proxy.lines().filter((l) => l.level === 50 && /revision 1 of the function library/.test(JSON.stringify(l)));
        expect(refused).toHaveLength(1);
        expect(JSON.stringify(refused[0])).toContain('FUNCTION LOAD REPLACE');
        // Nothing was read or written through the earlier library's scripts.
        expect(await s!.metric(/ticket_auth_proxy_token_store_operations_total\{operation="read",result="miss"\} (\S+)/)).toBe(0);
        expect(await dumpStore(admin, env.TOKEN_STORE_PREFIX!)).toEqual([]);
        const base = { BASE_URL: gateway.url, CLIENT_ID: CLIENT, CLIENT_SECRET: SECRET };
        const checked = await runCli(['check'], { ...base, ...env });
        expect(checked.code).toBe(1);
        expect(checked.stderr).toMatch(/revision 1 of the function library.*load it again/);
        // Loaded again, from this release: the store is usable.
        await admin.call('FUNCTION', 'LOAD', 'REPLACE', functionLibrary());
        expect((await runCli(['check'], { ...base, ...env })).code).toBe(0);
      } finally {
        await admin.call('FUNCTION', 'DELETE', LIBRARY_NAME);
      }
    });

    it('tells, in check, how long the token the fleet shares stays usable, never the token', async ({ mock, stack }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 60 });
      const env = storeEnv(target, freshPrefix());
      await startFleet(stack, gateway, 1, { clientId: CLIENT, secret: SECRET, env });
      const checked = await runCli(['check'], { BASE_URL: gateway.url, CLIENT_ID: CLIENT, CLIENT_SECRET: SECRET, ...env });
      expect(checked.code).toBe(0);
      // Usable for 54 s of its 60 (the last tenth is not used), less the time since it was fetched.
      const left = Number(/token store: holds a usable token for this credential, for (\d+) s more/.exec(checked.stdout)?.[1]);
      expect(left).toBeLessThanOrEqual(54);
      expect(left).toBeGreaterThanOrEqual(54 - Math.ceil(sinceFirstFetch(gateway) / 1000) - 1);
      for (const token of gateway.issuedTokens()) expect(checked.stdout + checked.stderr).not.toContain(token);
    });

    it('keeps a rotated secret apart: a proxy with the new secret reads nothing of the old, and one rotated later takes its token', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 60 });
      const env = storeEnv(target, freshPrefix());
      const secretFile = writeFile('rotating-secret', SECRET);
      const old = await stack({
        gateway,
        credentials: false,
        env: { ...env, CLIENT_ID: CLIENT, CLIENT_SECRET_FILE: secretFile },
        mustNotLeak: [SECRET],
      });
      const rotated = `${SECRET}-rotated`;
      gateway.setClientSecret(CLIENT, rotated);
      // A proxy adopts a token usable at least a second longer than its own: the new one is fetched later.
      await new Promise((r) => setTimeout(r, 1_100));
      const [fresh] = await startFleet(stack, gateway, 1, { clientId: CLIENT, secret: rotated, env });
      expect(gateway.tokenRequests).toHaveLength(2);
      expect(await fresh!.metric(ADOPTIONS)).toBe(0);
      // The old proxy's secret file is rotated: it takes the token the new namespace holds, without a fetch.
      writeFileSync(secretFile, rotated);
      await pollUntil(async () => (await old.metric(ADOPTIONS)) === 1, { timeoutMs: HUNG_MS });
      expect(gateway.tokenRequests).toHaveLength(2);
      old.mustNotLeak(rotated);
      expect(failures(await traffic([old, fresh!], 200))).toEqual({});
      expect((await dumpStore(admin, env.TOKEN_STORE_PREFIX!)).filter((k) => k.key.endsWith('}'))).toHaveLength(2);
    });

    it('shares a pass-through credential under its own secret: a wrong secret finds nothing and gets 401', async ({ mock, stack }) => {
      const gateway = await mock({ clients: { alpha: 'alpha-secret-63f1' }, tokenTtlS: 60 });
      const env = { ...storeEnv(target, freshPrefix()), PASSTHROUGH_BASIC: 'true' };
      const fleet = await Promise.all(
        [1, 2].map(() => stack({ gateway, credentials: false, env, mustNotLeak: ['alpha-secret-63f1', 'wrong-secret'] })),
      );
      const basic = (secret: string) => ({ authorization: `Basic ${Buffer.from(`alpha:${secret}`).toString('base64')}` });
      expect(failures(await traffic([fleet[0]!], 200, basic('alpha-secret-63f1')))).toEqual({});
      expect(gateway.tokenRequests).toHaveLength(1);
      expect(failures(await traffic([fleet[1]!], 200, basic('alpha-secret-63f1')))).toEqual({});
      expect(gateway.tokenRequests).toHaveLength(1);
      expect(await fleet[1]!.metric(ADOPTIONS)).toBe(1);
      const wrong = await fetch(`${fleet[1]!.proxy.proxyUrl}/api/v1/tickets`, { headers: basic('wrong-secret') });
      expect(wrong.status).toBe(401);
      expect(await fleet[1]!.metric(ADOPTIONS)).toBe(1);
    });
  },
);
