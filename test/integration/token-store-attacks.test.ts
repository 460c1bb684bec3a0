/**
 * A fleet of real proxies sharing tokens through a real redis-server while someone else writes the
 * prefix, as the proxies' own ACL user (the least a compromised application sharing that user
 * has): leases and failure records with times to live of weeks, a lease rewritten every second, a
 * failure record stretched and replayed, garbage written again and again, an old entry replayed.
 * Each passes when the callers keep getting 200, the fleet fetches no more than it would without a
 * store, and the anomaly is counted where a proxy can see one. And that user is refused what the
 * documented ACL line leaves out.
 */
import { Redis } from 'iovalkey';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import type { MockTicketService } from '../../src/mock/ticket-service.js';
import { failures, freshPrefix, sinceFirstFetch, startFleet, storeEnv, STORE_USER, traffic } from '../helpers/fleet.js';
import { pollUntil } from '../helpers/index.js';
import { adminClient, dumpStore, type RedisTarget } from '../helpers/redis-harness.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { test as it, type Stack } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const TTL_S = 6;
const RATIO = 0.5;
const CLIENT = 'fleet-client';
const SECRET = 'fleet-secret-attacked';
const PROXIES = 2;
/** Two lifetimes of traffic. */
const TRAFFIC_MS = 2 * TTL_S * 1000;
/** Weeks, as the attacks write them. */
const WEEKS_MS = 1_700_000_000;

/**
 * The most the same fleet fetches without a store from its first fetch until now: each proxy once
 * at start, then at most once per refresh at the earliest moment its schedule allows (half the
 * ratio of the lifetime). Counted over the time that really passed, starts included, so a busy
 * machine's slower run is given the refreshes it takes.
 */
const withoutStore = (gateway: MockTicketService): number =>
  PROXIES * (1 + Math.floor(sinceFirstFetch(gateway) / (TTL_S * 1000 * RATIO * 0.5)));

const anomalies = (fleet: Stack[], kind: string): Promise<number> =>
  Promise.all(fleet.map((s) => s.metric(new RegExp(`ticket_auth_proxy_token_store_anomalies_total\\{kind="${kind}"\\} (\\S+)`)))).then(
    (counts) => counts.reduce((a, b) => a + b, 0),
  );

// Each test serves a fleet for two or three token lifetimes (12-18 s) besides starting it: a
// minute and a half stops one that hangs, not one a busy machine slows.
describe.skipIf(lacks('redis-server') || lacks('redis-cli'))(
  `a token store someone else writes${skipNote('redis-server')}`,
  { timeout: 90_000 },
  () => {
    let server: RedisServer;
    let target: RedisTarget;
    let admin: Redis;
    /** The proxies' own ACL user, as another application sharing it would connect. */
    let attacker: Redis;
    beforeAll(async () => {
      server = await startRedis({ user: STORE_USER });
      target = { url: `redis://${STORE_USER.name}@127.0.0.1:${server.port}`, mode: 'standalone', password: STORE_USER.password };
      admin = adminClient(target) as Redis;
      attacker = new Redis({ port: server.port, host: '127.0.0.1', username: STORE_USER.name, password: STORE_USER.password });
    });
    afterAll(async () => {
      admin?.disconnect();
      attacker?.disconnect();
      await server?.stop();
    });

    const env = (prefix: string): Record<string, string> => ({
      ...storeEnv(target, prefix),
      TOKEN_FETCH_TIMEOUT_MS: '1000',
      TOKEN_REFRESH_RATIO: String(RATIO),
    });

    /** A fleet sharing one credential under a prefix of its own, and the name of its entry. */
    async function attackedFleet(
      mock: (o: { clients: Record<string, string>; tokenTtlS: number }) => Promise<MockTicketService>,
      stack: Parameters<typeof startFleet>[0],
    ) {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: TTL_S });
      const prefix = freshPrefix();
      const fleet = await startFleet(stack, gateway, PROXIES, { clientId: CLIENT, secret: SECRET, env: env(prefix) });
      const entry = (await dumpStore(admin, prefix)).find((k) => k.key.endsWith('}'))!.key;
      return { gateway, prefix, fleet, entry };
    }

    it('serves through a lease with weeks to live, cuts it, and counts it', async ({ mock, stack }) => {
      const { gateway, fleet, entry } = await attackedFleet(mock, stack);
      const before = gateway.tokenRequests.length;
      await attacker.set(`${entry}:lease`, 'x', 'PX', WEEKS_MS);
      expect(failures(await traffic(fleet, TRAFFIC_MS))).toEqual({});
      expect(gateway.tokenRequests.length - before).toBeGreaterThan(0);
      expect(gateway.tokenRequests.length).toBeLessThanOrEqual(withoutStore(gateway));
      expect(await anomalies(fleet, 'lease_too_long')).toBeGreaterThan(0);
      expect(await admin.pttl(`${entry}:lease`)).toBeLessThan(121_000);
    });

    it('serves through a lease rewritten with a new value every second', async ({ mock, stack }) => {
      const { gateway, fleet, entry } = await attackedFleet(mock, stack);
      const rewrite = setInterval(() => void attacker.set(`${entry}:lease`, String(Math.random()), 'PX', WEEKS_MS), 1_000);
      try {
        expect(failures(await traffic(fleet, TRAFFIC_MS))).toEqual({});
      } finally {
        clearInterval(rewrite);
      }
      expect(gateway.tokenRequests.length).toBeLessThanOrEqual(withoutStore(gateway));
      expect((await anomalies(fleet, 'lease_too_long')) + (await anomalies(fleet, 'lease_wait_exhausted'))).toBeGreaterThan(0);
    });

    it('honours a failure record stretched to weeks no longer than it was sealed for, and ignores it replayed later', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: TTL_S });
      const prefix = freshPrefix();
      // The first fetch is throttled for 2 s: its lease holder records the failure for the fleet.
      gateway.setTokenFault({ status: 429, headers: { 'retry-after': '2' }, times: 1 });
      const starting = startFleet(stack, gateway, PROXIES, { clientId: CLIENT, secret: SECRET, env: env(prefix) });
      let record: { key: string; value: unknown } | undefined;
      await pollUntil(async () => (record = (await dumpStore(admin, prefix)).find((k) => k.key.endsWith(':failure'))) !== undefined, {
        timeoutMs: 10_000,
        intervalMs: 5,
      });
      if (record === undefined) throw new Error('no failure record');
      await attacker.pexpire(record.key, WEEKS_MS);
      const fleet = await starting;
      expect(failures(await traffic(fleet, TTL_S * 1000))).toEqual({});
      // Replayed as it was captured, weeks to live, long after its sealed time.
      await attacker.set(record.key, record.value as string, 'PX', WEEKS_MS);
      const before = gateway.tokenRequests.length;
      expect(failures(await traffic(fleet, TRAFFIC_MS))).toEqual({});
      expect(gateway.tokenRequests.length - before).toBeGreaterThan(0);
      expect(gateway.tokenRequests.length).toBeLessThanOrEqual(withoutStore(gateway) + 1);
    });

    it('counts a failure record replayed with twenty days to live as failure_too_long, and cuts it to the longest wait a backoff asks for', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: TTL_S });
      const prefix = freshPrefix();
      // The first fetch is throttled: its lease holder records the failure, sealed, for the fleet.
      gateway.setTokenFault({ status: 429, headers: { 'retry-after': '1' }, times: 1 });
      const starting = startFleet(stack, gateway, PROXIES, { clientId: CLIENT, secret: SECRET, env: env(prefix) });
      let record: { key: string; value: unknown } | undefined;
      await pollUntil(async () => (record = (await dumpStore(admin, prefix)).find((k) => k.key.endsWith(':failure'))) !== undefined, {
        timeoutMs: 10_000,
        intervalMs: 5,
      });
      if (record === undefined) throw new Error('no failure record');
      const fleet = await starting;
      // Replayed as it was captured, long after its sealed time, with twenty days to live.
      await attacker.set(record.key, record.value as string, 'PX', 20 * 86_400_000);
      expect(failures(await traffic(fleet, TRAFFIC_MS))).toEqual({});
      expect(gateway.tokenRequests.length).toBeLessThanOrEqual(withoutStore(gateway) + 1);
      expect(await anomalies(fleet, 'failure_too_long')).toBeGreaterThan(0);
      // Cut to at most a Retry-After's longest wait, or gone with the next token written.
      expect(await admin.pttl(record.key)).toBeLessThanOrEqual(300_000);
    });

    it('serves through entries and failure records rewritten with garbage every 200 ms, never taking them', async ({ mock, stack }) => {
      const { gateway, fleet, entry } = await attackedFleet(mock, stack);
      const rewrite = setInterval(() => {
        void attacker.hset(entry, { exp: String(Date.now() + WEEKS_MS), fp: 'f'.repeat(64), ct: 'garbage' });
        void attacker.pexpire(entry, WEEKS_MS);
        void attacker.set(`${entry}:failure`, 'garbage', 'PX', WEEKS_MS);
      }, 200);
      try {
        expect(failures(await traffic(fleet, TRAFFIC_MS))).toEqual({});
      } finally {
        clearInterval(rewrite);
      }
      expect(gateway.tokenRequests.length).toBeLessThanOrEqual(withoutStore(gateway));
      expect(await anomalies(fleet, 'invalid_entry')).toBeGreaterThan(0);
      expect(await anomalies(fleet, 'invalid_failure')).toBeGreaterThan(0);
    });

    it('never serves an old entry replayed under its own name with weeks to live', async ({ mock, stack }) => {
      const { gateway, fleet, entry } = await attackedFleet(mock, stack);
      const old = (await admin.hgetall(entry)) as Record<string, string>;
      const first = gateway.issuedTokens().at(-1)!;
      // Past the old token's last usable moment.
      expect(failures(await traffic(fleet, TTL_S * 1000))).toEqual({});
      await attacker.del(entry);
      await attacker.hset(entry, old);
      await attacker.pexpire(entry, WEEKS_MS);
      const since = gateway.apiRequests.length;
      expect(failures(await traffic(fleet, TTL_S * 1000))).toEqual({});
      const served = gateway.apiRequests.slice(since).map((r) => r.headers.authorization);
      expect(served).not.toContain(`Bearer ${first}`);
    });

    it('answers wrong pass-through credentials by the hundred as without a store, deriving at most ten keys a minute', async ({
      mock,
      stack,
    }) => {
      const RIGHT = 'alpha-secret-2b7e';
      const gateway = await mock({ clients: { alpha: RIGHT }, tokenTtlS: 60 });
      const proxy = await stack({
        gateway,
        credentials: false,
        env: { ...env(freshPrefix()), PASSTHROUGH_BASIC: 'true' },
        mustNotLeak: [RIGHT],
      });
      const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
      const statuses: number[] = [];
      for (let batch = 0; batch < 10; batch++) {
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            fetch(`${proxy.proxy.proxyUrl}/api/v1/tickets`, { headers: basic(`caller-${batch}-${i}`, `wrong-${Math.random()}`) }),
          ),
        );
        for (const a of answers) {
          statuses.push(a.status);
          await a.arrayBuffer();
        }
      }
      // Each refused by the token endpoint, or, past ten new credentials a second, answered 503 untried
      // (docs/forwarding.md, "Pass-through credentials under a flood").
      expect([...new Set(statuses)].filter((s) => s !== 401 && s !== 503)).toEqual([]);
      // One token request each credential tried, as without a store; and the store is read for at most ten of them.
      expect(gateway.tokenRequests).toHaveLength(statuses.filter((s) => s === 401).length);
      expect(new Set(gateway.tokenRequests.map((r) => r.clientId)).size).toBe(gateway.tokenRequests.length);
      const reads = await proxy.metric(/ticket_auth_proxy_token_store_operations_total\{operation="read",result="miss"\} (\S+)/);
      expect(reads).toBeLessThanOrEqual(10);
      // The right credential, new to the proxy, is tried once the flood leaves room (a caller retrying
      // after its 503's Retry-After), and served from then on.
      await pollUntil(
        async () => (await fetch(`${proxy.proxy.proxyUrl}/api/v1/tickets`, { headers: basic('alpha', RIGHT) })).status === 200,
        { timeoutMs: 10_000, intervalMs: 1000 },
      );
      expect(failures(await traffic([proxy], 500, basic('alpha', RIGHT)))).toEqual({});
    });

    it('refuses the proxies’ own user what the documented ACL line leaves out', async () => {
      for (const command of [
        ['SCAN', '0'],
        ['KEYS', '*'],
        ['RANDOMKEY'],
        ['FUNCTION', 'LIST'],
        ['FUNCTION', 'FLUSH'],
        ['SCRIPT', 'FLUSH'],
        ['CONFIG', 'GET', 'maxmemory'],
        ['FLUSHALL'],
        ['GET', 'another-application:secret'],
      ]) {
        await expect(attacker.call(command[0]!, ...command.slice(1)), command.join(' ')).rejects.toThrow(/NOPERM/);
      }
    });
  },
);
