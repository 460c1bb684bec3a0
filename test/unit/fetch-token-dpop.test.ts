import type { IncomingMessage, ServerResponse } from 'node:http';
import { beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { createLogger } from '../../src/core/log.js';
import type { TokenFetchError } from '../../src/token/errors.js';
import { clientSecretPost } from '../../src/token/client-auth/client-secret-post.js';
import { clientAuthOf } from '../helpers/client-auth.js';
import { describeFetchFailure } from '../../src/token/diagnose.js';
import { createDpopClient, generateDpopKey, type DpopClient } from '../../src/token/dpop/index.js';
import { createTokenFetcher } from '../../src/token/fetch-token.js';
import { loopbackEndpoint } from '../helpers/loopback-endpoint.js';

/** Token requests with DPoP (RFC 9449 §5, §8) against a token endpoint on loopback. */

let proofs: Record<string, unknown>[];
let answer: (req: IncomingMessage, res: ServerResponse, n: number) => void;
const counted: string[] = [];

const endpoint = loopbackEndpoint((req, res) => {
  const proof = String(req.headers.dpop ?? '');
  proofs.push(JSON.parse(Buffer.from(proof.split('.')[1] ?? '', 'base64url').toString() || '{}') as Record<string, unknown>);
  answer(req, res, proofs.length);
});

beforeEach(() => {
  proofs = [];
  counted.length = 0;
});

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function setup(mode: 'on' | 'required' = 'on'): { dpop: DpopClient; fetch: () => ReturnType<ReturnType<typeof createTokenFetcher>> } {
  const dpop = createDpopClient({
    mode,
    key: generateDpopKey(),
    clock: systemClock,
    log: createLogger('silent'),
    observer: { proofMade: (t) => counted.push(`proof ${t}`), nonceRequested: (t) => counted.push(`nonce ${t}`) },
  });
  const fetcher = createTokenFetcher({
    tokenUrl: `${endpoint.origin}/token?x=1`,
    clientAuth: clientAuthOf(clientSecretPost),
    scope: undefined,
    timeoutMs: 2000,
    defaultTtlS: 300,
    dispatcher: endpoint.agent,
    now: Date.now,
    dpop,
  });
  return { dpop, fetch: () => fetcher({ clientId: 'c', clientSecret: 's' }) };
}

const dpopToken = (res: ServerResponse, headers: Record<string, string> = {}): void =>
  json(res, 200, { access_token: 't', token_type: 'dpop', expires_in: 60 }, headers);

describe('token requests with DPoP', () => {
  it('carry a proof for POST to the token URL without its query, and take a DPoP token (any case) as bound to the key', async () => {
    answer = (_req, res) => dpopToken(res);
    const { dpop, fetch } = setup();
    const grant = await fetch();
    expect(grant).toMatchObject({ accessToken: 't', tokenType: 'DPoP' });
    expect(grant.dpopKey).toBe(dpop.prover.key());
    expect(proofs[0]).toMatchObject({ htm: 'POST', htu: `${endpoint.origin}/token` });
    expect(proofs[0]).not.toHaveProperty('nonce');
    expect(proofs[0]).not.toHaveProperty('ath');
  });

  it('retry a use_dpop_nonce answer at once with its nonce, once, counted as a nonce request and not a failure', async () => {
    answer = (_req, res, n) => (n === 1 ? json(res, 400, { error: 'use_dpop_nonce' }, { 'dpop-nonce': 'n-1' }) : dpopToken(res));
    const { fetch } = setup();
    expect((await fetch()).tokenType).toBe('DPoP');
    expect(proofs.map((p) => p.nonce)).toEqual([undefined, 'n-1']);
    expect(proofs[0]!.jti).not.toBe(proofs[1]!.jti);
    expect(counted).toEqual(['proof token', 'nonce token', 'proof token']);
  });

  it('give up after one nonce retry: a second use_dpop_nonce is a refusal', async () => {
    answer = (_req, res, n) => json(res, 400, { error: 'use_dpop_nonce' }, { 'dpop-nonce': `n-${n}` });
    const { fetch } = setup();
    const err = (await fetch().catch((e: unknown) => e)) as TokenFetchError;
    expect(err.outcome).toBe('rejected');
    expect(proofs).toHaveLength(2);
  });

  it('keep the nonce of any answer, a 200 too, for the next token request', async () => {
    answer = (_req, res, n) => dpopToken(res, { 'dpop-nonce': `fresh-${n}` });
    const { fetch } = setup();
    await fetch();
    await fetch();
    await fetch();
    expect(proofs.map((p) => p.nonce)).toEqual([undefined, 'fresh-1', 'fresh-2']);
  });

  it('with DPOP=on take a Bearer answer as Bearer; with DPOP=required refuse it naming DPOP', async () => {
    answer = (_req, res) => json(res, 200, { access_token: 't', token_type: 'Bearer', expires_in: 60 });
    const bearer = await setup('on').fetch();
    expect(bearer.tokenType).toBe('Bearer');
    expect(bearer.dpopKey).toBeUndefined();
    const err = await setup('required')
      .fetch()
      .catch((e: unknown) => e);
    const account = describeFetchFailure(err, `${endpoint.origin}/token`);
    expect(account.outcome).toBe('invalid_response');
    expect(account.text).toContain('DPOP=required');
    expect(account.text).toContain('DPOP=on');
  });

  it('bind the token to the key current when the fetch began, even if the key is replaced meanwhile', async () => {
    const { dpop, fetch } = setup();
    const first = dpop.prover.key();
    answer = (_req, res) => {
      dpop.prover.replaceKey(generateDpopKey());
      dpopToken(res);
    };
    const grant = await fetch();
    expect(grant.dpopKey).toBe(first);
    expect(dpop.prover.key()).not.toBe(first);
  });
});
