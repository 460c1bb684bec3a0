/**
 * The store under a CPU limit: real proxy processes, each in a cgroup of its own held to a tenth of
 * a core (as a sidecar with `resources.limits.cpu: 100m`: bench/fleet/cpu-limit.js), sharing a
 * real redis-server with the documented ACL user, with the default `TOKEN_STORE_TIMEOUT_MS`. They
 * keep sharing (one fetch, the others adopt), a pass-through credential used through all three is
 * fetched once, a wrong store password is reported as refused in the log and in `check`, and a
 * store that hangs costs a request at start no more than the caller's own wait. Making a cgroup
 * takes root and a writable cpu controller: elsewhere the tests are skipped, saying why.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { cpuController, cpuLimit } from '../../bench/fleet/cpu-limit.js';
import { freshPrefix, storeEnv, STORE_USER } from '../helpers/fleet.js';
import { MAIN } from '../helpers/index.js';
import type { RedisTarget } from '../helpers/redis-harness.js';
import { blackHole, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { test as it, type Stack } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const CLIENT = 'limited-client';
const SECRET = 'limited-secret-5e07';
const CALLER = { id: 'caller-client', secret: 'caller-secret-81d2' };
const ADOPTIONS = /ticket_auth_proxy_token_adoptions_total (\S+)/;
const TIMED_OUT = /ticket_auth_proxy_token_store_operations_total\{operation="\w+",result="timeout"\} (\S+)/g;

const controller = cpuController();
const unavailable = controller.reason === undefined ? '' : ` [skipped: ${controller.reason}: a CPU limit takes a cgroup]`;

/** The cgroups made for this file's proxies, removed once they have exited. */
const made: { remove(): void }[] = [];
let serial = 0;

/** A command prefix that runs a process held to a tenth of a core, in a cgroup of its own. */
function tenthOfACore(): string[] {
  const limit = cpuLimit(`tap-test-${process.pid}-${++serial}`, 0.1);
  if (limit.reason !== undefined) throw new Error(limit.reason);
  made.push(limit);
  return limit.wrap;
}

/** The store's settings with the product's default store timeout (the fleet helper sets a generous one). */
function defaultTimeout(env: Record<string, string>): Record<string, string> {
  const { TOKEN_STORE_TIMEOUT_MS: _generous, ...rest } = env;
  return rest;
}

/** The sum of every store operation that timed out, as /metrics counts them. */
async function timedOut(s: Stack): Promise<number> {
  const text = await (await fetch(`${s.proxy.adminUrl}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^${TIMED_OUT.source}`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
}

/** A request until it is answered 200 (one past the caller's wait is answered 503 and sent again); the statuses. */
async function untilServed(s: Stack, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < 10 && statuses.at(-1) !== 200; i++) {
    const res = await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`, { headers });
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}

/** `node dist/main.js check` held to a tenth of a core: its exit code and output. */
function checkUnderLimit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const [command, ...prefix] = [...tenthOfACore(), process.execPath];
  return new Promise((resolve, reject) => {
    const child = spawn(command!, [...prefix, MAIN, 'check'], {
      env: { PATH: process.env.PATH, LISTEN_PORT: '0', ADMIN_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    // Only stops a hung command.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`check did not finish; output:\n${output}`));
    }, 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe.skipIf(controller.reason !== undefined || lacks('redis-server') || lacks('redis-cli'))(
  `proxies held to a tenth of a core, sharing a real Redis with the default store timeout${unavailable}${skipNote('redis-server')}`,
  () => {
    let server: RedisServer;
    let target: RedisTarget;
    beforeAll(async () => {
      server = await startRedis({ user: STORE_USER });
      target = { url: `redis://${STORE_USER.name}@127.0.0.1:${server.port}`, mode: 'standalone', password: STORE_USER.password };
    });
    afterAll(async () => {
      await server?.stop();
      for (const limit of made.splice(0)) limit.remove();
    });

    it('shares one token among three throttled proxies started together, and fetches a pass-through credential used through all three once', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET, [CALLER.id]: CALLER.secret }, tokenTtlS: 600 });
      // A pass-through attempt waits for its key's derivation as long as its caller waits
      // (TOKEN_WAIT_TIMEOUT_MS), then fetches alone: three derivations on a tenth of a core, beside
      // a whole suite on two cores, can take longer than the default 5 s. The wait is not what this
      // test measures; the store's timeout at its default is.
      const env = { ...defaultTimeout(storeEnv(target, freshPrefix())), PASSTHROUGH_BASIC: 'true', TOKEN_WAIT_TIMEOUT_MS: '30000' };
      const fleet = await Promise.all(
        [1, 2, 3].map(() =>
          stack({
            gateway,
            clientId: CLIENT,
            secret: SECRET,
            env,
            wrap: tenthOfACore(),
            readyTimeoutMs: 60_000,
            mustNotLeak: [CALLER.secret],
          }),
        ),
      );
      const fetched = (id: string) => gateway.tokenRequests.filter((r) => r.clientId === id).length;
      expect(fetched(CLIENT)).toBe(1);
      const adopted = async () => (await Promise.all(fleet.map((s) => s.metric(ADOPTIONS)))).reduce((a, b) => a + b);
      expect(await adopted()).toBe(2);

      // The caller's credential through all three at once: each derives its key (seconds of scrypt here).
      const basic = { authorization: `Basic ${Buffer.from(`${CALLER.id}:${CALLER.secret}`).toString('base64')}` };
      const statuses = await Promise.all(fleet.map((s) => untilServed(s, basic)));
      expect(statuses.map((s) => s.at(-1))).toEqual([200, 200, 200]);
      expect(fetched(CALLER.id)).toBe(1);
      expect(await adopted()).toBe(4);
      expect(fetched(CLIENT)).toBe(1);
      expect((await Promise.all(fleet.map(timedOut))).reduce((a, b) => a + b)).toBe(0);
    }, 180_000);

    it('reports a wrong store password as refused, WRONGPASS, in the log of a throttled proxy and in a throttled check', async ({
      mock,
      stack,
    }) => {
      const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 600 });
      const env = defaultTimeout(storeEnv({ ...target, password: 'not-the-store-password' }, freshPrefix()));
      const s = await stack({ gateway, clientId: CLIENT, secret: SECRET, env, wrap: tenthOfACore(), readyTimeoutMs: 60_000 });
      s.mustNotLeak('not-the-store-password', STORE_USER.password);
      expect(await untilServed(s)).toEqual([200]);
      const refused = await s.proxy.waitForLog((l) => l.level === 50 && String(l.msg).startsWith('token store unavailable'), 30_000);
      expect(JSON.stringify(refused)).toContain('WRONGPASS');
      expect(s.proxy.output()).not.toContain('did not answer within');

      const checked = await checkUnderLimit({ BASE_URL: gateway.url, CLIENT_ID: CLIENT, CLIENT_SECRET: SECRET, ...env });
      expect(checked.code).toBe(1);
      expect(checked.output).toContain('WRONGPASS');
      expect(checked.output).not.toContain('did not answer within');
      expect(checked.output).not.toContain('not-the-store-password');
    }, 120_000);

    it('answers the first request to a throttled proxy whose store accepts and never answers, within the caller’s own wait', async ({
      mock,
      stack,
    }) => {
      const hole = await blackHole();
      try {
        const gateway = await mock({ clients: { [CLIENT]: SECRET }, tokenTtlS: 600 });
        const s = await stack({
          gateway,
          clientId: CLIENT,
          secret: SECRET,
          env: { TOKEN_STORE_URL: `redis://127.0.0.1:${hole.port}` },
          wrap: tenthOfACore(),
          ready: false,
        });
        // Sent as soon as the proxy listens, before it holds a token: it waits one store timeout for
        // the store, then fetches alone, and answers before the caller's wait (TOKEN_WAIT_TIMEOUT_MS) ends in a 503.
        const first = await fetch(`${s.proxy.proxyUrl}/api/v1/tickets`);
        await first.arrayBuffer();
        expect(first.status).toBe(200);
        expect(hole.connections()).toBeGreaterThan(0);
        expect(gateway.tokenRequests).toHaveLength(1);
        expect(await timedOut(s)).toBeGreaterThan(0);
      } finally {
        await hole.close();
      }
    }, 120_000);
  },
);
