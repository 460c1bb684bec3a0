import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect } from 'vitest';
import type { TokenFault } from '../../src/mock/ticket-service.js';
import { metric, test as it, type StartStack } from '../helpers/stack.js';

/** The callers' secrets and Basic values of the current test: the stack checks at teardown that none reached a log line, at any level. */
let secrets: string[] = [];
beforeEach(() => {
  secrets = [];
});

const secret = (): string => {
  const s = `s-${randomBytes(8).toString('hex')}`;
  secrets.push(s, Buffer.from(s).toString('base64'));
  return s;
};

const basic = (id: string, s: string): string => {
  const encoded = Buffer.from(`${id}:${s}`).toString('base64');
  secrets.push(encoded);
  return `Basic ${encoded}`;
};

/** Three workspaces known to the mock, one proxy with pass-through on and no configured credential. */
async function setup(stack: StartStack, env: Record<string, string> = {}, gatewayOptions: { fault?: TokenFault } = {}) {
  const clients = { alpha: secret(), beta: secret(), gamma: secret() };
  const { gateway, proxy } = await stack({
    mock: { clients },
    credentials: false,
    tokenFault: gatewayOptions.fault,
    env: { PASSTHROUGH_BASIC: 'true', LOG_LEVEL: 'trace', ...env },
    ready: false,
    mustNotLeak: secrets,
  });
  const get = (authorization?: string) =>
    fetch(`${proxy.proxyUrl}/api/v1/tickets`, { headers: authorization === undefined ? {} : { authorization } });
  return { clients, gateway, proxy, get };
}

describe('pass-through credentials', () => {
  it('serves three workspaces behind one proxy, each with its own tickets, and never forwards the Basic credentials', async ({ stack }) => {
    const { clients, gateway, proxy, get } = await setup(stack);
    expect((await fetch(`${proxy.adminUrl}/readyz`)).status).toBe(200);
    for (const [id, s] of Object.entries(clients)) {
      const res = await get(basic(id, s));
      expect(res.status).toBe(200);
      expect(((await res.json()) as { workspace: string }).workspace).toBe(id);
    }
    expect(gateway.tokenRequests.map((r) => r.clientId)).toEqual(['alpha', 'beta', 'gamma']);
    for (const r of gateway.apiRequests) expect(r.headers.authorization).toMatch(/^Bearer /);
    // A second round uses the cached tokens.
    for (const [id, s] of Object.entries(clients)) expect((await get(basic(id, s))).status).toBe(200);
    expect(gateway.tokenRequests).toHaveLength(3);
    expect(await metric(proxy, /ticket_auth_proxy_token_cache_entries\{route="default"\} (\S+)/)).toBe(3);
    expect(await metric(proxy, /ticket_auth_proxy_token_fetches_total\{route="default",outcome="success"\} (\S+)/)).toBe(3);
    const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    // No configured credential: no token of its own, and no gauge of one to alert on.
    expect(text).not.toContain('ticket_auth_proxy_token_expiry_timestamp_seconds');
    for (const id of Object.keys(clients)) expect(text).not.toContain(id);
  });

  it('fetches pass-through tokens with TOKEN_AUTH_METHOD=client_secret_basic, TOKEN_SCOPE and TOKEN_PARAMS', async ({ stack }) => {
    const { clients, gateway, get } = await setup(stack, {
      TOKEN_AUTH_METHOD: 'client_secret_basic',
      TOKEN_SCOPE: 'tickets.read',
      TOKEN_PARAMS: 'audience=https%3A%2F%2Fapi',
    });
    expect((await get(basic('beta', clients.beta))).status).toBe(200);
    expect(gateway.tokenRequests[0]).toMatchObject({ clientId: 'beta', authMethod: 'basic', scope: 'tickets.read' });
    expect(gateway.tokenRequests[0]!.form).toContainEqual(['audience', 'https://api']);
  });

  it('answers a wrong secret 401 invalid_client and remembers the rejection instead of asking again', async ({ stack }) => {
    const { clients, gateway, get } = await setup(stack);
    const wrong = basic('alpha', secret());
    const first = await get(wrong);
    expect(first.status).toBe(401);
    expect(first.headers.get('content-type')).toContain('application/problem+json');
    const body = (await first.json()) as { code: string };
    expect(body.code).toBe('invalid_client');
    expect(JSON.stringify(body)).not.toContain('alpha');
    const again = await Promise.all(Array.from({ length: 20 }, () => get(wrong).then((r) => r.status)));
    expect(again).toEqual(Array(20).fill(401));
    expect(gateway.tokenRequests).toHaveLength(1);
    // The right secret for the same id is not affected.
    expect((await get(basic('alpha', clients.alpha))).status).toBe(200);
  });

  it('answers an unknown client id 401 invalid_client', async ({ stack }) => {
    const { get } = await setup(stack);
    const res = await get(basic('nobody', secret()));
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe('invalid_client');
  });

  it('answers malformed Basic credentials 401 invalid_client without asking the token endpoint', async ({ stack }) => {
    const { gateway, get } = await setup(stack);
    const malformed = [
      'Basic !!!not-base64',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      `Basic ${Buffer.from(':secret').toString('base64')}`,
      'Basic',
    ];
    for (const header of malformed) {
      const res = await get(header);
      expect(res.status, header).toBe(401);
      expect(((await res.json()) as { code: string }).code).toBe('invalid_client');
    }
    expect(gateway.tokenRequests).toHaveLength(0);
  });

  it('makes exactly one fetch per credential for 200 concurrent cold requests across three credentials', async ({ stack }) => {
    const { clients, gateway, get } = await setup(stack, {}, { fault: { kind: 'delay', ms: 500 } });
    const ids = Object.keys(clients) as (keyof typeof clients)[];
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        const id = ids[i % 3]!;
        return get(basic(id, clients[id])).then(async (r) => [r.status, ((await r.json()) as { workspace?: string }).workspace]);
      }),
    );
    expect(answers).toEqual(Array.from({ length: 200 }, (_, i) => [200, ids[i % 3]]));
    expect(gateway.tokenRequests).toHaveLength(3);
  });

  it('serves three credentials in turn through a cache of two, holding at most two entries', async ({ stack }) => {
    const { clients, gateway, proxy, get } = await setup(stack, { TOKEN_CACHE_MAX: '2' });
    for (let round = 0; round < 2; round++) {
      for (const [id, s] of Object.entries(clients)) {
        const res = await get(basic(id, s));
        expect(res.status).toBe(200);
        expect(((await res.json()) as { workspace: string }).workspace).toBe(id);
        expect(await metric(proxy, /ticket_auth_proxy_token_cache_entries\{route="default"\} (\S+)/)).toBeLessThanOrEqual(2);
      }
    }
    // Each turn evicted the least recently used credential, so each came back with a new fetch.
    expect(gateway.tokenRequests).toHaveLength(6);
  });

  it('answers a request without Basic credentials 401 credentials_required when none are configured', async ({ stack }) => {
    const { gateway, get } = await setup(stack);
    const res = await get();
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe('credentials_required');
    expect(gateway.tokenRequests).toHaveLength(0);
  });

  it('uses the configured credential for requests without Basic credentials', async ({ stack }) => {
    const s = secret();
    secrets.push(s + 'x');
    const { proxy } = await stack({
      clientId: 'configured',
      secret: s,
      mock: { clients: { configured: s, other: s + 'x' }, tokenTtlS: 60 },
      env: { PASSTHROUGH_BASIC: 'true', LOG_LEVEL: 'trace' },
      mustNotLeak: secrets,
    });
    const plain = await fetch(`${proxy.proxyUrl}/api/v1/tickets`);
    expect(((await plain.json()) as { workspace: string }).workspace).toBe('configured');
    const other = await fetch(`${proxy.proxyUrl}/api/v1/tickets`, { headers: { authorization: basic('other', s + 'x') } });
    expect(((await other.json()) as { workspace: string }).workspace).toBe('other');
  });
});
