/**
 * A caller who sends pass-through credentials by the thousand (docs/forwarding.md, "Pass-through
 * credentials under a flood"), from outside: the real proxy with a configured credential and
 * pass-through on, the embedded mock as a slow identity provider (300 ms a token request), and
 * 1,000 distinct wrong Basic credentials, each sent once, 400 at a time. The configured
 * credential's callers are answered 200 throughout (its token refreshed meanwhile), a working
 * workspace keeps its cached token, a new workspace that retries after the Retry-After of a 503 is
 * served, the token endpoint sees at most one request per distinct credential and none for them
 * once the flood is over, and the flood leaves a few log lines, not one per credential.
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { describe, expect } from 'vitest';
import { pollUntil } from '../helpers/index.js';
import { test } from '../helpers/stack.js';

const FLOOD = 1_000;
const AT_ONCE = 400;

const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

describe('pass-through credentials under a flood', () => {
  test('keep the configured credential, a working workspace and a new one served, and ask the token endpoint once per credential', async ({
    stack,
  }) => {
    const old = { id: 'ws-old', secret: `s-${randomBytes(8).toString('hex')}` };
    const fresh = { id: 'ws-new', secret: `s-${randomBytes(8).toString('hex')}` };
    const wrong = Array.from({ length: FLOOD }, (_, i) => ({ id: `flood-${i}`, secret: randomBytes(6).toString('hex') }));
    const s = await stack({
      // Tokens of 4 s: the configured credential refreshes during the flood.
      mock: { clients: { client: 'configured-secret', [old.id]: old.secret, [fresh.id]: fresh.secret }, tokenTtlS: 4 },
      clientId: 'client',
      secret: 'configured-secret',
      env: { PASSTHROUGH_BASIC: 'true', TOKEN_WAIT_TIMEOUT_MS: '3000' },
      mustNotLeak: [old.secret, fresh.secret, ...wrong.slice(0, 50).map((w) => basic(w.id, w.secret).slice(6))],
    });
    const agent = new Agent({ connections: AT_ONCE + 8 });
    const get = async (authorization?: string): Promise<{ status: number; retryAfter: string | undefined }> => {
      const res = await request(`${s.proxy.proxyUrl}/api/v1/tickets`, {
        dispatcher: agent,
        headers: authorization === undefined ? {} : { authorization },
      });
      await res.body.dump();
      return { status: res.statusCode, retryAfter: res.headers['retry-after'] as string | undefined };
    };
    try {
      expect((await get(basic(old.id, old.secret))).status).toBe(200);
      // Every token request from now on takes 300 ms.
      s.gateway.setTokenFault({ kind: 'delay', ms: 300, times: Infinity });
      const configuredRefreshes = (): number => s.gateway.tokenRequests.filter((r) => r.clientId === 'client').length;
      const refreshesBefore = configuredRefreshes();
      const linesBefore = s.proxy.lines().length;

      let flooding = true;
      const flood: number[] = [];
      const configured: number[] = [];
      const configuredCalls = (async () => {
        while (flooding) configured.push((await get()).status);
      })();
      // The new workspace arrives once the flood is being refused, and retries as its 503's Retry-After says.
      const newcomer = (async () => {
        await pollUntil(() => flood.includes(503), { timeoutMs: 30_000, intervalMs: 5 });
        const answers: { status: number; retryAfter: string | undefined }[] = [];
        const started = Date.now();
        for (let i = 0; i < 10; i++) {
          const answer = await get(basic(fresh.id, fresh.secret));
          answers.push(answer);
          if (answer.status !== 503) break;
          const wait = Number(answer.retryAfter) * 1000;
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
        return { answers, waitedMs: Date.now() - started };
      })();
      let next = 0;
      await Promise.all(
        Array.from({ length: AT_ONCE }, async () => {
          while (next < wrong.length) {
            const w = wrong[next++]!;
            flood.push((await get(basic(w.id, w.secret))).status);
          }
        }),
      );
      const linesOfFlood = s.proxy.lines().slice(linesBefore);
      const seen = await newcomer;
      // The configured credential refreshed at least once while the flood went on, and its callers never waited on it.
      await pollUntil(() => configuredRefreshes() > refreshesBefore, { timeoutMs: 10_000 });
      flooding = false;
      await configuredCalls;

      expect(configured.length).toBeGreaterThan(0);
      expect(configured.filter((c) => c !== 200)).toEqual([]);
      expect(new Set(flood)).toEqual(new Set([...flood].filter((c) => c === 401 || c === 503)));
      expect(flood.filter((c) => c === 401).length).toBeGreaterThan(0);
      expect(seen.answers.at(-1)).toMatchObject({ status: 200 });
      for (const a of seen.answers.slice(0, -1)) expect(a).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) });
      // At most one token request per distinct credential.
      const byId = new Map<string, number>();
      for (const r of s.gateway.tokenRequests) byId.set(r.clientId!, (byId.get(r.clientId!) ?? 0) + 1);
      expect([...byId].filter(([id, n]) => id.startsWith('flood-') && n > 1)).toEqual([]);
      // The working workspace keeps its token: served from the cache, no token request on its account.
      const oldFetches = (): number => s.gateway.tokenRequests.filter((r) => r.clientId === old.id).length;
      const before = oldFetches();
      expect((await get(basic(old.id, old.secret))).status).toBe(200);
      expect(oldFetches()).toBe(before);
      // None for the flood's credentials once it is over: another refresh of the configured credential comes, and nothing else.
      const floodRequests = s.gateway.tokenRequests.filter((r) => r.clientId?.startsWith('flood-')).length;
      const refreshed = configuredRefreshes();
      await pollUntil(() => configuredRefreshes() > refreshed, { timeoutMs: 10_000 });
      expect(s.gateway.tokenRequests.filter((r) => r.clientId?.startsWith('flood-')).length).toBe(floodRequests);
      expect(linesOfFlood.length).toBeLessThan(20);
      process.stdout.write(
        `passthrough flood: ${FLOOD} wrong credentials, ${flood.filter((c) => c === 401).length} answered 401, ` +
          `${flood.filter((c) => c === 503).length} 503; ${floodRequests} token requests for them; ` +
          `configured callers ${configured.length} answers, all 200; the new workspace served after ${seen.waitedMs} ms ` +
          `(${seen.answers.length} requests); ${linesOfFlood.length} log lines\n`,
      );
    } finally {
      await agent.close();
    }
  }, 90_000);
});
