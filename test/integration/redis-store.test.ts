/**
 * The token store contract against a real redis-server: standalone with a user limited to the
 * prefix by the documented ACL line, over TLS with a throwaway CA and a client certificate, and
 * a three-node cluster with the same user (the scripts name keys of one hash slot).
 */
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'iovalkey';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseCaFile } from '../../src/net/tls-material.js';
import { functionLibrary } from '../../src/store/scripts.js';
import { clientCert, createCa, localhostCert } from '../helpers/certs.js';
import { adminClient, redisHarness, type RedisTarget } from '../helpers/redis-harness.js';
import { aclRules, startRedis, startRedisCluster, type RedisCluster, type RedisServer } from '../helpers/redis-server.js';
import { storeContract, type StoreHarness } from '../helpers/store-contract.js';
import { lacks, skipNote } from '../helpers/tools.js';

const USER = { name: 'ticket-proxy', password: 'store-password-5c1', prefix: 'tap-test:' };

/** Runs the contract on a target made by `start`, with a fresh prefix under the user's for each test. */
function contractOn(name: string, start: () => Promise<{ target: RedisTarget; stop(): Promise<void> }>): void {
  describe(name, () => {
    let started: { target: RedisTarget; stop(): Promise<void> };
    let admin: Redis | Cluster;
    let current: (StoreHarness & { closeAll(): Promise<void> }) | undefined;
    beforeAll(async () => {
      started = await start();
      admin = adminClient(started.target);
    });
    afterEach(async () => {
      await current?.closeAll();
    });
    afterAll(async () => {
      admin?.disconnect();
      await started?.stop();
    });
    storeContract(name, async () => (current = redisHarness(started.target, admin, USER.prefix)));
  });
}

describe.skipIf(lacks('redis-server') || lacks('redis-cli'))(`the token store on a real Redis${skipNote('redis-server')}`, () => {
  contractOn('standalone, as a user limited to the prefix', async () => {
    const server: RedisServer = await startRedis({ user: USER });
    return {
      target: { url: `redis://${USER.name}@127.0.0.1:${server.port}`, mode: 'standalone', password: USER.password },
      stop: () => server.stop(),
    };
  });

  contractOn('over TLS, verified against a private CA, presenting a client certificate', async () => {
    const ca = await createCa('Store Test CA');
    const serverCert = await localhostCert(ca);
    const client = await clientCert(ca);
    const server = await startRedis({ user: USER, tls: { ...serverCert, ca: ca.cert, client } });
    return {
      target: {
        url: `rediss://${USER.name}@localhost:${server.port}`,
        mode: 'standalone',
        password: USER.password,
        tls: { ca: parseCaFile(ca.cert), ...client },
        adminTls: { ca: ca.cert, ...client },
      },
      stop: () => server.stop(),
    };
  });

  contractOn('standalone, TOKEN_STORE_SCRIPTS=functions, as a user with FCALL and no EVAL', async () => {
    const server: RedisServer = await startRedis({ user: { ...USER, scripts: 'functions' } });
    await server.cli('FUNCTION', 'LOAD', 'REPLACE', functionLibrary());
    return {
      target: { url: `redis://${USER.name}@127.0.0.1:${server.port}`, mode: 'standalone', password: USER.password, scripts: 'functions' },
      stop: () => server.stop(),
    };
  });

  contractOn('a three-node cluster, TOKEN_STORE_SCRIPTS=functions loaded on every primary', async () => {
    const cluster: RedisCluster = await startRedisCluster({ user: { ...USER, scripts: 'functions' } });
    for (const node of cluster.nodes) await node.cli('FUNCTION', 'LOAD', 'REPLACE', functionLibrary());
    return {
      target: {
        url: cluster.nodes.map((n) => `redis://${USER.name}@127.0.0.1:${n.port}`).join(','),
        mode: 'cluster',
        password: USER.password,
        scripts: 'functions',
      },
      stop: () => cluster.stop(),
    };
  });

  contractOn('a three-node cluster, as a user limited to the prefix', async () => {
    const cluster: RedisCluster = await startRedisCluster({ user: USER });
    return {
      target: {
        url: cluster.nodes.map((n) => `redis://${USER.name}@127.0.0.1:${n.port}`).join(','),
        mode: 'cluster',
        password: USER.password,
      },
      stop: () => cluster.stop(),
    };
  });
});

describe('the ACL line the documentation gives', () => {
  it('is exactly the commands of the user every store test runs under, for EVAL and for FCALL', () => {
    const lines = [
      ...readFileSync(new URL('../../docs/token-store.md', import.meta.url), 'utf8').matchAll(
        /^ACL SETUSER ticket-proxy on >PASSWORD (.*)$/gm,
      ),
    ];
    const documented = lines.map((m) => m[1]!.split(' ').sort());
    const tested = (['eval', 'functions'] as const).map((scripts) => aclRules('ticket-auth-proxy:', false, scripts).sort());
    expect(documented).toEqual(tested);
  });
});
