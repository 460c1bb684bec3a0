/**
 * A fleet of eight real proxies with one credential, sharing tokens through a real redis-server:
 * standalone with a user limited to the prefix by the documented ACL line, over TLS with a
 * throwaway CA and a client certificate, and a three-node cluster. The mock counts the fetches:
 * about one a token lifetime for the whole fleet, and about one after the gateway revokes the
 * token; the store holds nothing readable.
 */
import type { Cluster, Redis } from 'iovalkey';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { parseCaFile } from '../../src/net/tls-material.js';
import { clientCert, createCa, localhostCert } from '../helpers/certs.js';
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
} from '../helpers/fleet.js';
import { adminClient, dumpStore, type RedisTarget } from '../helpers/redis-harness.js';
import { startRedis, startRedisCluster } from '../helpers/redis-server.js';
import { test as it } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const FLEET = 8;
const TTL_S = 3;
const LIFETIMES = 3;
const CLIENT = 'fleet-client';
const SECRET = 'fleet-secret-4b9d2e';

function fleetOn(name: string, start: () => Promise<{ target: RedisTarget; stop(): Promise<void> }>): void {
  describe(name, () => {
    let started: { target: RedisTarget; stop(): Promise<void> };
    let admin: Redis | Cluster;
    beforeAll(async () => {
      started = await start();
      admin = adminClient(started.target);
    });
    afterAll(async () => {
      admin?.disconnect();
      await started?.stop();
    });

    it('fetches about once a token lifetime for eight proxies started together, through traffic and a revocation, and stores nothing readable', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: TTL_S });
      const prefix = freshPrefix();
      const fleet = await startFleet(stack, gateway, FLEET, { clientId: CLIENT, secret: SECRET, env: storeEnv(started.target, prefix) });
      // Started at once: at most two fetch their first token, the others take it from the store
      // (however long the starts took, and whatever refreshes came meanwhile).
      const fetchedFirst = (await firstTokens(fleet)).filter((how) => how === 'fetched').length;
      expect(fetchedFirst).toBeGreaterThanOrEqual(1);
      expect(fetchedFirst).toBeLessThanOrEqual(2);

      const beforeTraffic = gateway.tokenRequests.length;
      const statuses = await traffic(fleet, LIFETIMES * TTL_S * 1000);
      expect(failures(statuses)).toEqual({});
      // Three lifetimes served without an error need two new tokens at least. Without the store:
      // eight at start and eight every 40-80 % of a lifetime, about 40 here; with it, one and a
      // half a lifetime since the first fetch, beyond the start's.
      expect(gateway.tokenRequests.length - beforeTraffic).toBeGreaterThanOrEqual(LIFETIMES - 1);
      expect(gateway.tokenRequests.length - fetchedFirst).toBeLessThanOrEqual(sharedFetchBound(sinceFirstFetch(gateway), TTL_S));
      const adoptions = await Promise.all(fleet.map((s) => s.metric(/ticket_auth_proxy_token_adoptions_total (\S+)/)));
      expect(adoptions.reduce((a, b) => a + b)).toBeGreaterThanOrEqual(FLEET - 1);

      // The gateway revokes every token: each proxy meets its own 401; one fetch serves them all
      // (and a refresh may fall due while it does).
      const beforeRevocation = gateway.tokenRequests.length;
      const revokedAt = Date.now();
      gateway.revokeAll();
      const afterRevocation = await traffic(fleet, 600);
      expect(failures(afterRevocation)).toEqual({});
      expect(gateway.tokenRequests.length - beforeRevocation).toBeLessThanOrEqual(1 + sharedFetchBound(Date.now() - revokedAt, TTL_S));

      // The store read back as anyone with its password sees it: no token, secret, client id or URL.
      const keys = await dumpStore(admin, prefix);
      const entries = keys.filter((k) => k.key.endsWith('}'));
      expect(entries).toHaveLength(1);
      const raw = JSON.stringify(keys);
      for (const token of gateway.issuedTokens()) expect(raw).not.toContain(token);
      for (const clear of [SECRET, CLIENT, gateway.url, '127.0.0.1', 'oauth2']) expect(raw).not.toContain(clear);
      expect(entries[0]!.key).toMatch(new RegExp(`^${prefix}v1:\\{[0-9a-f]{64}\\}$`));
      expect(Object.keys(entries[0]!.value).sort()).toEqual(['ct', 'exp', 'fp']);
      expect(entries[0]!.ttlMs).toBeGreaterThan(0);
      expect(entries[0]!.ttlMs).toBeLessThanOrEqual(TTL_S * 1000);
    }, 180_000);
  });
}

describe.skipIf(lacks('redis-server') || lacks('redis-cli'))(
  `a fleet sharing one credential through a real Redis${skipNote('redis-server')}`,
  () => {
    fleetOn('standalone, as a user limited to the prefix', async () => {
      const server = await startRedis({ user: STORE_USER });
      return {
        target: { url: `redis://${STORE_USER.name}@127.0.0.1:${server.port}`, mode: 'standalone', password: STORE_USER.password },
        stop: () => server.stop(),
      };
    });

    fleetOn('over TLS, verified against a private CA, presenting a client certificate', async () => {
      const ca = await createCa('Fleet Store CA');
      const client = await clientCert(ca);
      const server = await startRedis({ user: STORE_USER, tls: { ...(await localhostCert(ca)), ca: ca.cert, client } });
      return {
        target: {
          url: `rediss://${STORE_USER.name}@localhost:${server.port}`,
          mode: 'standalone',
          password: STORE_USER.password,
          tls: { ca: parseCaFile(ca.cert), ...client },
          adminTls: { ca: ca.cert, ...client },
        },
        stop: () => server.stop(),
      };
    });

    fleetOn('a three-node cluster, as a user limited to the prefix', async () => {
      const cluster = await startRedisCluster({ user: STORE_USER });
      return {
        target: {
          url: cluster.nodes.map((n) => `redis://${STORE_USER.name}@127.0.0.1:${n.port}`).join(','),
          mode: 'cluster',
          password: STORE_USER.password,
        },
        stop: () => cluster.stop(),
      };
    });
  },
);
