import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { IssuerMetadataError } from '../../src/token/errors.js';
import { readIssuerMetadata, type MetadataReaderOptions } from '../../src/token/discovery/issuer-metadata.js';
import { loopbackEndpoint } from '../helpers/loopback-endpoint.js';

/** What the server answers at a path: a status and a JSON body (or text), or nothing at all (the connection dropped). */
type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | 'drop' | 'hang';

let replies: Record<string, Reply> = {};
const asked: string[] = [];

const endpoint = loopbackEndpoint((req, res: ServerResponse) => {
  asked.push(req.url ?? '');
  const reply = replies[req.url ?? ''] ?? { status: 404, body: { error: 'not_found' } };
  if (reply === 'drop') return void req.socket.destroy();
  if (reply === 'hang') return;
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
  res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  res.end(text);
});

const OAUTH = '/.well-known/oauth-authorization-server/realms/t';
const OPENID = '/realms/t/.well-known/openid-configuration';

function read(serve: Record<string, Reply>, options: Partial<MetadataReaderOptions> = {}) {
  replies = serve;
  asked.splice(0);
  return readIssuerMetadata({
    issuer: `${endpoint.origin}/realms/t`,
    dispatcher: endpoint.agent,
    timeoutMs: 2_000,
    allowInsecureHttp: false,
    mutualTls: false,
    now: Date.now,
    ...options,
  });
}

const doc = (extra: Record<string, unknown> = {}) => ({
  issuer: `${endpoint.origin}/realms/t`,
  token_endpoint: `${endpoint.origin}/realms/t/protocol/openid-connect/token`,
  ...extra,
});

async function failure(promise: Promise<unknown>): Promise<IssuerMetadataError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(IssuerMetadataError);
  return err as IssuerMetadataError;
}

describe('reading an issuer metadata', () => {
  it("reads RFC 8414's document first, and stops there when it is usable", async () => {
    const metadata = await read({
      [OAUTH]: {
        status: 200,
        body: doc({ token_endpoint_auth_methods_supported: ['private_key_jwt'], dpop_signing_alg_values_supported: ['ES256'] }),
      },
      [OPENID]: { status: 200, body: doc({ token_endpoint: 'https://elsewhere.example/token' }) },
    });
    expect(metadata).toEqual({
      issuer: `${endpoint.origin}/realms/t`,
      documentUrl: `${endpoint.origin}${OAUTH}`,
      tokenEndpoint: `${endpoint.origin}/realms/t/protocol/openid-connect/token`,
      authMethods: ['private_key_jwt'],
      dpopAlgs: ['ES256'],
    });
    expect(asked).toEqual([OAUTH]);
  });

  it("falls back to OpenID Connect's document when RFC 8414's is not there, as Keycloak's is not", async () => {
    const metadata = await read({ [OPENID]: { status: 200, body: doc() } });
    expect(metadata.documentUrl).toBe(`${endpoint.origin}${OPENID}`);
    expect(metadata.authMethods).toBeUndefined();
    expect(metadata.dpopAlgs).toBeUndefined();
    expect(asked).toEqual([OAUTH, OPENID]);
  });

  it('falls back when the first answer is a page that is no JSON object', async () => {
    const metadata = await read({
      [OAUTH]: { status: 200, body: '<html>sign in</html>' },
      [OPENID]: { status: 200, body: doc() },
    });
    expect(metadata.documentUrl).toBe(`${endpoint.origin}${OPENID}`);
  });

  it('names ISSUER_URL and both documents when neither is there, as an invalid response', async () => {
    const err = await failure(read({}));
    expect(err.outcome).toBe('invalid_response');
    expect(err.message).toBe(
      `ISSUER_URL ${endpoint.origin}/realms/t serves no metadata: ${endpoint.origin}${OAUTH} answered 404, ` +
        `${endpoint.origin}${OPENID} answered 404`,
    );
    expect(err.hint).toContain('Keycloak: https://<host>/realms/<realm>');
  });

  it('refuses a document naming another issuer, showing both values, and uses none of it (RFC 8414 §3.3)', async () => {
    const err = await failure(read({ [OPENID]: { status: 200, body: doc({ issuer: 'https://evil.example/realms/t' }) } }));
    expect(err.outcome).toBe('invalid_response');
    expect(err.message).toContain(`ISSUER_URL's metadata ${endpoint.origin}${OPENID} cannot be used`);
    expect(err.message).toContain(`"https://evil.example/realms/t", not ISSUER_URL "${endpoint.origin}/realms/t"`);
    expect(err.hint).toContain('nothing on the way');
  });

  it('refuses an issuer that differs by its trailing slash only, saying to set ISSUER_URL as the provider writes it', async () => {
    const err = await failure(read({ [OPENID]: { status: 200, body: doc({ issuer: `${endpoint.origin}/realms/t/` }) } }));
    expect(err.message).toContain('they differ by the trailing slash only');
    expect(err.hint).toBe(`set ISSUER_URL=${endpoint.origin}/realms/t/, exactly as the identity provider writes its issuer`);
  });

  it('prefers a usable second document to a first one that names another issuer', async () => {
    const metadata = await read({
      [OAUTH]: { status: 200, body: doc({ issuer: 'https://other.example' }) },
      [OPENID]: { status: 200, body: doc() },
    });
    expect(metadata.documentUrl).toBe(`${endpoint.origin}${OPENID}`);
  });

  it('holds the token endpoint to TOKEN_URL rules: http only for loopback unless ALLOW_INSECURE_HTTP', async () => {
    const plain = { [OAUTH]: { status: 200, body: doc({ token_endpoint: 'http://idp.example/token' }) } } as const;
    const err = await failure(read(plain));
    expect(err.outcome).toBe('invalid_response');
    expect(err.message).toContain('its token_endpoint uses http: for a non-loopback host (idp.example)');
    expect((await read(plain, { allowInsecureHttp: true })).tokenEndpoint).toBe('http://idp.example/token');
    const withQuery = await failure(read({ [OAUTH]: { status: 200, body: doc({ token_endpoint: 'https://idp.example/t?x=1' }) } }));
    expect(withQuery.message).toContain('must not have a query or fragment');
  });

  it('refuses a document without a token_endpoint', async () => {
    const err = await failure(read({ [OAUTH]: { status: 200, body: { issuer: `${endpoint.origin}/realms/t` } } }));
    expect(err.message).toContain('it names no token_endpoint');
  });

  it("uses the token endpoint's mutual-TLS alias for a client that proves itself with its certificate (RFC 8705 §5)", async () => {
    const body = doc({ mtls_endpoint_aliases: { token_endpoint: 'https://mtls.idp.example/token' } });
    expect((await read({ [OAUTH]: { status: 200, body } }, { mutualTls: true })).tokenEndpoint).toBe('https://mtls.idp.example/token');
    expect((await read({ [OAUTH]: { status: 200, body } })).tokenEndpoint).toBe(
      `${endpoint.origin}/realms/t/protocol/openid-connect/token`,
    );
  });

  it('ignores a list that is not a list of strings', async () => {
    const metadata = await read({ [OAUTH]: { status: 200, body: doc({ token_endpoint_auth_methods_supported: 'client_secret_basic' }) } });
    expect(metadata.authMethods).toBeUndefined();
  });

  it('counts the issuer throttling as rate_limited with its Retry-After, without asking for the second document', async () => {
    const err = await failure(read({ [OAUTH]: { status: 429, headers: { 'retry-after': '7' } }, [OPENID]: { status: 200, body: doc() } }));
    expect(err.outcome).toBe('rate_limited');
    expect(err.retryAfterMs).toBe(7_000);
    expect(asked).toEqual([OAUTH]);
  });

  it("counts the issuer's 5xx as server_error when no document is usable", async () => {
    const err = await failure(read({ [OAUTH]: { status: 503 } }));
    expect(err.outcome).toBe('server_error');
    expect(err.message).toBe(`ISSUER_URL's metadata ${endpoint.origin}${OAUTH} answered 503`);
  });

  it('counts a connection that breaks as network_error, naming ISSUER_URL, without trying the second document', async () => {
    const err = await failure(read({ [OAUTH]: 'drop', [OPENID]: { status: 200, body: doc() } }));
    expect(err.outcome).toBe('network_error');
    expect(err.message).toMatch(new RegExp(`^ISSUER_URL's metadata ${endpoint.origin}${OAUTH} unreachable \\(`));
    expect(err.hint).toBe('check the host name and port of ISSUER_URL, and HTTPS_PROXY/NO_PROXY');
    expect(asked).toEqual([OAUTH]);
  });

  it('counts an issuer that does not answer within TOKEN_FETCH_TIMEOUT_MS as a timeout', async () => {
    const err = await failure(read({ [OAUTH]: 'hang' }, { timeoutMs: 200 }));
    expect(err.outcome).toBe('timeout');
    expect(err.message).toBe(`ISSUER_URL's metadata ${endpoint.origin}${OAUTH} did not answer within 200 ms`);
  });

  it('counts an unreachable issuer as network_error', async () => {
    const err = await failure(
      readIssuerMetadata({
        issuer: 'http://127.0.0.1:9/t',
        dispatcher: endpoint.agent,
        timeoutMs: 2_000,
        allowInsecureHttp: false,
        mutualTls: false,
        now: Date.now,
      }),
    );
    expect(err.outcome).toBe('network_error');
    expect(err.message).toContain('unreachable (ECONNREFUSED)');
  });
});
