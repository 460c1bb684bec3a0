import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeEach, describe, expect, it } from 'vitest';
import { TokenFetchError, TokenRefusedError } from '../../src/token/errors.js';
import { createTokenFetcher } from '../../src/token/fetch-token.js';
import { assertionFromFile } from '../../src/token/client-auth/client-assertion-file.js';
import { parseParams } from '../../src/config/values.js';
import { clientSecretBasic } from '../../src/token/client-auth/client-secret-basic.js';
import { clientSecretJwt } from '../../src/token/client-auth/client-secret-jwt.js';
import { clientSecretPost } from '../../src/token/client-auth/client-secret-post.js';
import type { AuthMethod, ClientAuth } from '../../src/token/client-auth/index.js';
import { tlsClientAuth } from '../../src/token/client-auth/tls-client-auth.js';
import { clientAuthOf, clientAuthWith } from '../helpers/client-auth.js';
import { loopbackEndpoint } from '../helpers/loopback-endpoint.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let seen: Seen[];
let answer: (req: IncomingMessage, res: ServerResponse) => void;

const endpoint = loopbackEndpoint((req, res, body) => {
  seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: body.toString('utf8') });
  answer(req, res);
});

beforeEach(() => {
  seen = [];
  answer = (_req, res) => json(res, 200, { access_token: 'tok-1', token_type: 'Bearer', expires_in: 600 });
});

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function fetcher(
  options: {
    authMethod?: AuthMethod | ClientAuth;
    scope?: string;
    timeoutMs?: number;
    url?: string;
    extraParams?: [string, string][];
  } = {},
) {
  const method = options.authMethod ?? clientSecretPost;
  return createTokenFetcher({
    tokenUrl: options.url ?? `${endpoint.origin}/gw/api/v1/oauth2/token`,
    clientAuth: 'authenticate' in method ? method : clientAuthOf(method),
    scope: options.scope,
    extraParams: options.extraParams ?? [],
    timeoutMs: options.timeoutMs ?? 5_000,
    defaultTtlS: 300,
    dispatcher: endpoint.agent,
    now: Date.now,
  });
}

async function failure(p: Promise<unknown>): Promise<TokenFetchError> {
  const err = await p.then(
    () => {
      throw new Error('expected the fetch to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TokenFetchError);
  return err as TokenFetchError;
}

/** application/x-www-form-urlencoded decoding, as a token endpoint does it. */
function formDecode(s: string): string {
  return decodeURIComponent(s.replace(/\+/g, ' '));
}

const CREDENTIAL = { clientId: 'my client:1', clientSecret: 'se:cr et%/+&=' };

describe('createTokenFetcher', () => {
  it('sends TOKEN_PARAMS after the grant fields, encoded so that &, =, +, spaces and non-ASCII arrive intact', async () => {
    const { params } = parseParams({ audience: 'https://api.example.com/x?a=1&b=2', resource: ['a b+c', 'Zürich ✓'] }, 'tokenParams');
    await fetcher({ extraParams: params, scope: 's1' })(CREDENTIAL);
    const form = new URLSearchParams(seen[0]!.body);
    expect([...form.keys()]).toEqual(['grant_type', 'client_id', 'client_secret', 'scope', 'audience', 'resource', 'resource']);
    expect(form.get('audience')).toBe('https://api.example.com/x?a=1&b=2');
    expect(form.getAll('resource')).toEqual(['a b+c', 'Zürich ✓']);
  });

  it('sends client_id and no secret with tls_client_auth', async () => {
    await fetcher({ authMethod: tlsClientAuth })(CREDENTIAL);
    const req = seen[0]!;
    expect(req.headers.authorization).toBeUndefined();
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({ grant_type: 'client_credentials', client_id: 'my client:1' });
  });

  it('reads the assertion file for every request, retries included, and never sends a secret', async () => {
    let content = 'aaa.bbb.ccc';
    const auth = clientAuthWith(assertionFromFile({ path: '/f', read: () => content + '\n', assertionType: 'urn:x', now: Date.now }));
    const fetch = fetcher({ authMethod: auth });
    content = `${b64({ alg: 'none' })}.${b64({ iss: 'i', exp: Math.floor(Date.now() / 1000) + 600 })}.sig1`;
    await fetch(CREDENTIAL);
    content = content.replace('sig1', 'sig2');
    await fetch(CREDENTIAL);
    const forms = seen.map((r) => Object.fromEntries(new URLSearchParams(r.body)));
    expect(forms.map((f) => f.client_assertion?.slice(-4))).toEqual(['sig1', 'sig2']);
    expect(forms[0]).toEqual({
      grant_type: 'client_credentials',
      client_id: 'my client:1',
      client_assertion_type: 'urn:x',
      client_assertion: content.replace('sig2', 'sig1'),
    });
  });

  it('posts the client credentials grant as a form with client_secret_post', async () => {
    const grant = await fetcher()(CREDENTIAL);
    expect(grant).toEqual({ accessToken: 'tok-1', lifetimeMs: 600_000, tokenType: 'Bearer' });
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/gw/api/v1/oauth2/token');
    expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(req.headers.accept).toBe('application/json');
    expect(req.headers.authorization).toBeUndefined();
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({
      grant_type: 'client_credentials',
      client_id: 'my client:1',
      client_secret: 'se:cr et%/+&=',
    });
  });

  it('sends HTTP Basic with the id and secret form-encoded before they are joined (RFC 6749 §2.3.1)', async () => {
    await fetcher({ authMethod: clientSecretBasic })(CREDENTIAL);
    const req = seen[0]!;
    const auth = req.headers.authorization!;
    expect(auth.startsWith('Basic ')).toBe(true);
    const pair = Buffer.from(auth.slice('Basic '.length), 'base64').toString('utf8');
    expect(pair).toBe('my+client%3A1:se%3Acr+et%25%2F%2B%26%3D');
    const colon = pair.indexOf(':');
    expect(formDecode(pair.slice(0, colon))).toBe(CREDENTIAL.clientId);
    expect(formDecode(pair.slice(colon + 1))).toBe(CREDENTIAL.clientSecret);
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({ grant_type: 'client_credentials' });
  });

  it("form-encodes the characters encodeURIComponent leaves alone (!'()~) for Basic", async () => {
    await fetcher({ authMethod: clientSecretBasic })({ clientId: "id!'()~*", clientSecret: 's~(x)' });
    const pair = Buffer.from(seen[0]!.headers.authorization!.slice('Basic '.length), 'base64').toString('utf8');
    expect(pair).toBe('id%21%27%28%29%7E*:s%7E%28x%29');
  });

  it('sends the scope when one is configured', async () => {
    await fetcher({ scope: 'tickets:read tickets:write' })(CREDENTIAL);
    expect(new URLSearchParams(seen[0]!.body).get('scope')).toBe('tickets:read tickets:write');
    await fetcher()(CREDENTIAL);
    expect(new URLSearchParams(seen[1]!.body).has('scope')).toBe(false);
  });

  it('reports a rejected client with its OAuth error', async () => {
    answer = (_req, res) => json(res, 401, { error: 'invalid_client', error_description: 'unknown client' });
    const err = await failure(fetcher()(CREDENTIAL));
    expect(err).toMatchObject({ outcome: 'rejected', status: 401, oauthError: 'invalid_client', oauthErrorDescription: 'unknown client' });
    expect(err.message).not.toContain(CREDENTIAL.clientSecret);
  });

  it.each([400, 401, 403])('reports a bare %i as a refusal, with what the refused request was made of', async (status) => {
    answer = (_req, res) => {
      res.writeHead(status);
      res.end();
    };
    const err = await failure(fetcher({ authMethod: clientSecretBasic })({ clientId: 'app', clientSecret: 'a+b' }));
    expect(err).toBeInstanceOf(TokenRefusedError);
    expect(err).toMatchObject({ outcome: 'rejected', status, oauthError: undefined });
    const refusal = (err as TokenRefusedError).refusal;
    expect(refusal.scopeSet).toBe(false);
    expect(refusal.credentials).toContain('CLIENT_ID');
    expect(refusal.alternative).toContain('client_secret_post');
    const scoped = await failure(fetcher({ scope: 'read' })({ clientId: 'app', clientSecret: 'a+b' }));
    expect((scoped as TokenRefusedError).refusal).toMatchObject({ scopeSet: true, alternative: undefined });
  });

  it('signs a new client_secret_jwt assertion for every request, retries included, and never sends the secret', async () => {
    const f = fetcher({ authMethod: clientSecretJwt });
    await f({ clientId: 'app', clientSecret: 'sup3r-secret' });
    await f({ clientId: 'app', clientSecret: 'sup3r-secret' });
    const assertions = seen.map((s) => new URLSearchParams(s.body).get('client_assertion'));
    expect(new Set(assertions).size).toBe(2);
    for (const s of seen) {
      expect(s.body).not.toContain('sup3r-secret');
      expect(s.headers.authorization).toBeUndefined();
      expect(new URLSearchParams(s.body).get('client_assertion_type')).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    }
  });

  it('reports a 429 with its Retry-After', async () => {
    answer = (_req, res) => json(res, 429, { error: 'slow_down' }, { 'retry-after': '17' });
    const err = await failure(fetcher()(CREDENTIAL));
    expect(err).toMatchObject({ outcome: 'rate_limited', status: 429, retryAfterMs: 17_000 });
  });

  it('gives up with outcome timeout when the endpoint does not answer in time', async () => {
    answer = () => {
      /* never answers */
    };
    const started = Date.now();
    const err = await failure(fetcher({ timeoutMs: 200 })(CREDENTIAL));
    expect(err.outcome).toBe('timeout');
    expect(err.message).toContain('200 ms');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('gives up with outcome timeout when the body stops half way', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"access_token":"tok-');
    };
    const err = await failure(fetcher({ timeoutMs: 200 })(CREDENTIAL));
    expect(err.outcome).toBe('timeout');
  });

  it('reports a refused connection as network_error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = await failure(fetcher({ url: `http://127.0.0.1:${port}/api/v1/oauth2/token` })(CREDENTIAL));
    expect(err.outcome).toBe('network_error');
    expect(err.message).toContain('ECONNREFUSED');
    expect(err.message).not.toContain(CREDENTIAL.clientSecret);
  });

  it('refuses an oversized body as invalid_response', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: 'tok-1', padding: 'x'.repeat(100 * 1024) }));
    };
    const err = await failure(fetcher()(CREDENTIAL));
    expect(err).toMatchObject({ outcome: 'invalid_response', status: 200 });
  });

  it('accepts a body just under the size limit', async () => {
    answer = (_req, res) => json(res, 200, { access_token: 'tok-2', expires_in: 60, padding: 'x'.repeat(60 * 1024) });
    expect(await fetcher()(CREDENTIAL)).toEqual({ accessToken: 'tok-2', lifetimeMs: 60_000, tokenType: 'Bearer' });
  });
});

function b64(o: unknown): string {
  return Buffer.from(JSON.stringify(o)).toString('base64url');
}
