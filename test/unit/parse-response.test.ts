import { describe, expect, it } from 'vitest';
import { TokenFetchError } from '../../src/token/errors.js';
import { DESCRIPTION_MAX, jwtExpiry, parseRetryAfter, parseTokenResponse, RETRY_AFTER_CAP_MS } from '../../src/token/parse-response.js';

const SENT_AT = Date.UTC(2026, 0, 1, 12, 0, 0);
const OPTS = { defaultTtlS: 300, sentAt: SENT_AT };
const TOKEN = 'AT-9f8e7d6c5b4a-do-not-leak';

function b64url(v: unknown): string {
  return Buffer.from(JSON.stringify(v)).toString('base64url');
}
function jwt(claims: object): string {
  return `${b64url({ alg: 'RS256', typ: 'JWT' })}.${b64url(claims)}.c2lnbmF0dXJl`;
}
function ok(body: unknown, headers: Record<string, string> = {}) {
  return parseTokenResponse(200, headers, typeof body === 'string' ? body : JSON.stringify(body), OPTS);
}
/** The TokenFetchError `fn` throws; fails the test when it throws nothing or something else. */
function thrown(fn: () => unknown): TokenFetchError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TokenFetchError);
    return err as TokenFetchError;
  }
  throw new Error('expected a TokenFetchError, nothing was thrown');
}

describe('parseTokenResponse: a usable token (RFC 6749 §5.1)', () => {
  it('takes expires_in as a number of seconds', () => {
    expect(ok({ access_token: TOKEN, token_type: 'Bearer', expires_in: 3600 })).toEqual({
      accessToken: TOKEN,
      lifetimeMs: 3_600_000,
      tokenType: 'Bearer',
    });
  });

  it.each([
    ['3600', 3_600_000],
    [' 120 ', 120_000],
    ['1.5', 1_500],
  ])('takes expires_in as the numeric string %j', (expiresIn, lifetimeMs) => {
    expect(ok({ access_token: TOKEN, token_type: 'Bearer', expires_in: expiresIn }).lifetimeMs).toBe(lifetimeMs);
  });

  it('counts a JWT exp claim from when the request was sent when expires_in is absent', () => {
    const token = jwt({ sub: 'app', exp: SENT_AT / 1000 + 600 });
    expect(ok({ access_token: token, token_type: 'Bearer' })).toEqual({ accessToken: token, lifetimeMs: 600_000, tokenType: 'Bearer' });
  });

  it('takes expires_in when it ends before the JWT exp claim', () => {
    const token = jwt({ exp: SENT_AT / 1000 + 600 });
    expect(ok({ access_token: token, expires_in: 60 }).lifetimeMs).toBe(60_000);
  });

  it('takes the JWT exp claim when it falls before sent + expires_in, as when the IdP rounds the issue time down', () => {
    const token = jwt({ exp: SENT_AT / 1000 + 599.5 });
    expect(ok({ access_token: token, expires_in: 600 }).lifetimeMs).toBe(599_500);
  });

  it('refuses a JWT already expired even when expires_in promises more', () => {
    const token = jwt({ exp: SENT_AT / 1000 - 1 });
    expect(thrown(() => ok({ access_token: token, expires_in: 600 })).outcome).toBe('invalid_response');
  });

  it('treats a null expires_in as absent', () => {
    const token = jwt({ exp: SENT_AT / 1000 + 600 });
    expect(ok({ access_token: token, expires_in: null }).lifetimeMs).toBe(600_000);
  });

  it('assumes the default lifetime for a token that is no JWT and has no expires_in', () => {
    expect(ok({ access_token: TOKEN, token_type: 'Bearer' }).lifetimeMs).toBe(300_000);
    expect(parseTokenResponse(200, {}, JSON.stringify({ access_token: TOKEN }), { defaultTtlS: 42, sentAt: SENT_AT }).lifetimeMs).toBe(
      42_000,
    );
  });

  it('assumes the default lifetime for a JWT without a numeric exp claim', () => {
    expect(ok({ access_token: jwt({ sub: 'app' }) }).lifetimeMs).toBe(300_000);
    expect(ok({ access_token: jwt({ exp: '1767272400' }) }).lifetimeMs).toBe(300_000);
    expect(ok({ access_token: 'a.not-base64-json.c' }).lifetimeMs).toBe(300_000);
  });

  it.each(['Bearer', 'bearer', 'BEARER', 'bEaReR'])('accepts token_type %j', (tokenType) => {
    expect(ok({ access_token: TOKEN, token_type: tokenType, expires_in: 60 }).accessToken).toBe(TOKEN);
  });

  it('accepts a response without token_type', () => {
    expect(ok({ access_token: TOKEN, expires_in: 60 }).accessToken).toBe(TOKEN);
  });

  it('keeps the scope granted, to the characters and spacing of RFC 6749 §3.3, and none when the answer has none', () => {
    expect(ok({ access_token: TOKEN, expires_in: 60, scope: 'tickets:read  tickets:write ' }).scope).toBe('tickets:read tickets:write');
    expect(ok({ access_token: TOKEN, expires_in: 60, scope: 'a\u001b[31m\n"b\\c' }).scope).toBe('a[31mbc');
    expect(ok({ access_token: TOKEN, expires_in: 60, scope: 'x'.repeat(2000) }).scope).toBe(`${'x'.repeat(1000)}...`);
    for (const scope of [undefined, '', '  ', 7, ['a']])
      expect(ok({ access_token: TOKEN, expires_in: 60, scope })).not.toHaveProperty('scope');
  });

  it('accepts any 2xx status', () => {
    expect(parseTokenResponse(201, {}, JSON.stringify({ access_token: TOKEN, expires_in: 1 }), OPTS).lifetimeMs).toBe(1_000);
  });
});

describe('parseTokenResponse: an unusable answer is an invalid_response', () => {
  const cases: [string, string][] = [
    ['a token_type other than Bearer', JSON.stringify({ access_token: TOKEN, token_type: 'mac', expires_in: 60 })],
    ['token_type DPoP', JSON.stringify({ access_token: TOKEN, token_type: 'DPoP', expires_in: 60 })],
    ['a token_type that is no string', JSON.stringify({ access_token: TOKEN, token_type: 1, expires_in: 60 })],
    ['an empty access_token', JSON.stringify({ access_token: '', token_type: 'Bearer', expires_in: 60 })],
    ['an access_token that is no string', JSON.stringify({ access_token: 12345, token_type: 'Bearer' })],
    ['no access_token', JSON.stringify({ token_type: 'Bearer', expires_in: 60, note: TOKEN })],
    ['a body that is not JSON', `access_token=${TOKEN}&token_type=bearer`],
    ['an HTML page', `<html><body>${TOKEN}</body></html>`],
    ['a JSON string', JSON.stringify(TOKEN)],
    ['a JSON array', JSON.stringify([{ access_token: TOKEN }])],
    ['JSON null', 'null'],
    ['a JSON number', '42'],
    ['a zero expires_in', JSON.stringify({ access_token: TOKEN, expires_in: 0 })],
    ['a negative expires_in', JSON.stringify({ access_token: TOKEN, expires_in: -5 })],
    ['a non-numeric expires_in', JSON.stringify({ access_token: TOKEN, expires_in: 'soon' })],
    ['an expires_in that is a boolean', JSON.stringify({ access_token: TOKEN, expires_in: true })],
    ['an expired JWT', JSON.stringify({ access_token: jwt({ exp: SENT_AT / 1000 - 1, jti: TOKEN }) })],
    ['a JWT that expires as it is sent', JSON.stringify({ access_token: jwt({ exp: SENT_AT / 1000 }) })],
  ];

  it.each(cases)('refuses %s', (_what, body) => {
    const err = thrown(() => parseTokenResponse(200, {}, body, OPTS));
    expect(err.outcome).toBe('invalid_response');
    expect(err.status).toBe(200);
  });

  it.each(cases)('never quotes the access token in the message for %s', (_what, body) => {
    const err = thrown(() => parseTokenResponse(200, {}, body, OPTS));
    expect(err.message).not.toContain(TOKEN);
    expect(err.message).not.toContain('9f8e7d6c5b4a');
  });
});

describe('parseTokenResponse: the token endpoint said no (RFC 6749 §5.2)', () => {
  const body = JSON.stringify({ error: 'invalid_client', error_description: 'Client authentication failed' });

  it.each([400, 401, 403])('counts %i as rejected, with error and error_description', (status) => {
    const err = thrown(() => parseTokenResponse(status, {}, body, OPTS));
    expect(err).toMatchObject({
      outcome: 'rejected',
      status,
      oauthError: 'invalid_client',
      oauthErrorDescription: 'Client authentication failed',
      retryAfterMs: undefined,
    });
    expect(err.message).toContain('invalid_client');
    expect(err.message).toContain('Client authentication failed');
  });

  it.each([
    [400, ''],
    [401, ''],
    [403, ''],
    [403, '<html>Forbidden</html>'],
  ])('counts a bare %i (body %j) as rejected too: some identity providers refuse a client that way', (status, bare) => {
    const err = thrown(() => parseTokenResponse(status, {}, bare, OPTS));
    expect(err).toMatchObject({ outcome: 'rejected', status, oauthError: undefined, oauthErrorDescription: undefined });
    expect(err.message).toBe(`token endpoint answered ${status}`);
  });

  it('counts 429 as rate_limited with Retry-After in seconds', () => {
    const err = thrown(() => parseTokenResponse(429, { 'retry-after': '30' }, '{"error":"slow_down"}', OPTS));
    expect(err).toMatchObject({ outcome: 'rate_limited', status: 429, oauthError: 'slow_down', retryAfterMs: 30_000 });
  });

  it('counts 429 as rate_limited with Retry-After as an HTTP date', () => {
    const at = new Date(SENT_AT + 90_000).toUTCString();
    const err = thrown(() => parseTokenResponse(429, { 'retry-after': at }, '', OPTS));
    expect(err).toMatchObject({ outcome: 'rate_limited', retryAfterMs: 90_000 });
  });

  it('caps Retry-After at 5 minutes, as seconds and as a date', () => {
    expect(RETRY_AFTER_CAP_MS).toBe(300_000);
    const inSeconds = thrown(() => parseTokenResponse(429, { 'retry-after': '86400' }, '', OPTS));
    expect(inSeconds.retryAfterMs).toBe(300_000);
    const asDate = thrown(() => parseTokenResponse(429, { 'retry-after': new Date(SENT_AT + 3_600_000).toUTCString() }, '', OPTS));
    expect(asDate.retryAfterMs).toBe(300_000);
  });

  it('ignores a Retry-After it cannot read', () => {
    expect(thrown(() => parseTokenResponse(429, { 'retry-after': 'later please' }, '', OPTS)).retryAfterMs).toBeUndefined();
    expect(thrown(() => parseTokenResponse(429, {}, '', OPTS)).retryAfterMs).toBeUndefined();
  });

  it('reads the first of repeated Retry-After headers', () => {
    expect(thrown(() => parseTokenResponse(429, { 'retry-after': ['5', '50'] }, '', OPTS)).retryAfterMs).toBe(5_000);
  });

  it.each([404, 405])('counts %i as invalid_response: no token endpoint at this URL', (status) => {
    const err = thrown(() => parseTokenResponse(status, {}, '<html>not found</html>', OPTS));
    expect(err).toMatchObject({ outcome: 'invalid_response', status });
  });

  it.each([500, 502, 503, 504, 302])('counts %i as server_error', (status) => {
    const err = thrown(() => parseTokenResponse(status, {}, '<html>oops</html>', OPTS));
    expect(err).toMatchObject({ outcome: 'server_error', status, oauthError: undefined, oauthErrorDescription: undefined });
    expect(err.message).toContain(String(status));
  });

  it('honours Retry-After on a 503', () => {
    const err = thrown(() => parseTokenResponse(503, { 'retry-after': '120' }, '', OPTS));
    expect(err).toMatchObject({ outcome: 'server_error', retryAfterMs: 120_000 });
  });

  it('keeps control characters out of, and bounds the length of, the logged OAuth error', () => {
    const err = thrown(() =>
      parseTokenResponse(400, {}, JSON.stringify({ error: 'invalid\nclient\u0000', error_description: 'x'.repeat(1_000) }), OPTS),
    );
    expect(err.oauthError).toBe('invalidclient');
    expect(err.oauthErrorDescription).toHaveLength(DESCRIPTION_MAX);
    expect(DESCRIPTION_MAX).toBe(256);
  });

  it('takes every secret the request carried out of what a provider echoes, as sent and form-encoded, before cutting it', () => {
    const secret = 'S3cr3t p@ss/ü';
    const assertion = 'eyJhbGciOi.payload.signature';
    const description =
      `client secret '${secret}' does not match; form said ${encodeURIComponent(secret)} and ` +
      `${new URLSearchParams({ s: secret }).toString().slice(2)}; assertion ${assertion}; ${'x'.repeat(200)} ${secret}`;
    const err = thrown(() =>
      parseTokenResponse(401, {}, JSON.stringify({ error: 'invalid_client', error_description: description }), {
        ...OPTS,
        secrets: [secret, assertion],
      }),
    );
    expect(err.oauthError).toBe('invalid_client');
    for (const shown of [err.oauthErrorDescription!, err.message]) {
      for (const leak of [secret, encodeURIComponent(secret), 'S3cr3t', assertion]) expect(shown).not.toContain(leak);
    }
    expect(err.oauthErrorDescription).toMatch(
      /^client secret '\[redacted\]' does not match; form said \[redacted\] and \[redacted\]; assertion \[redacted\]/,
    );
    expect(err.oauthErrorDescription!.length).toBeLessThanOrEqual(DESCRIPTION_MAX);
  });

  it.each(['{}', '[]', '{"error":null}', '{"error":{"code":7}}', '{"error_description":["x"]}', '{"message":"slow down"}'])(
    'reads %s as an answer without an OAuth error, keeping its status and Retry-After, whatever the request carried',
    (body) => {
      for (const status of [403, 429]) {
        const err = thrown(() =>
          parseTokenResponse(status, { 'retry-after': '30' }, body, { ...OPTS, secrets: ['a-secret-of-some-length', 'xy'] }),
        );
        expect(err).toBeInstanceOf(TokenFetchError);
        expect(err).toMatchObject({ outcome: status === 403 ? 'rejected' : 'rate_limited', status, oauthError: undefined });
        expect(err.retryAfterMs).toBe(30_000);
      }
    },
  );

  it('withholds a description that holds a secret too short to take out, and keeps a registered code whatever it spells', () => {
    const err = thrown(() =>
      parseTokenResponse(401, {}, JSON.stringify({ error: 'invalid_client', error_description: 'secret abc is wrong' }), {
        ...OPTS,
        secrets: ['abc', 'd'],
      }),
    );
    expect(err.oauthError).toBe('invalid_client');
    expect(err.oauthErrorDescription).toBe('[withheld: it held a secret the request carried]');
    expect(err.message).not.toContain('abc');
  });

  it('drops an error code that holds a secret, and finds a secret split by characters that are not shown', () => {
    const err = thrown(() =>
      parseTokenResponse(400, {}, JSON.stringify({ error: 'bad_hunter2', error_description: 'hun\u0000ter2 is wrong' }), {
        ...OPTS,
        secrets: ['hunter2'],
      }),
    );
    expect(err.oauthError).toBeUndefined();
    expect(err.oauthErrorDescription).toBe('[redacted] is wrong');
  });

  it('never quotes an access token that an error body carries', () => {
    const err = thrown(() => parseTokenResponse(500, {}, JSON.stringify({ access_token: TOKEN, error: 'server_error' }), OPTS));
    expect(err.message).not.toContain(TOKEN);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates, a past date as zero', () => {
    expect(parseRetryAfter('0', SENT_AT)).toBe(0);
    expect(parseRetryAfter(' 7 ', SENT_AT)).toBe(7_000);
    expect(parseRetryAfter(new Date(SENT_AT - 60_000).toUTCString(), SENT_AT)).toBe(0);
    expect(parseRetryAfter(undefined, SENT_AT)).toBeUndefined();
  });

  it('reads all three HTTP-date forms, and nothing else that Date.parse would take', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 12:00:30 GMT', SENT_AT)).toBe(30_000);
    expect(parseRetryAfter('Thursday, 01-Jan-26 12:00:30 GMT', SENT_AT)).toBe(30_000);
    expect(parseRetryAfter('Thu Jan  1 12:00:30 2026', SENT_AT)).toBe(30_000);
    for (const junk of ['1.5', '-3', 'soon', 'junk 2024', '2026-01-01T12:00:30Z', 'Tue 3']) {
      expect(parseRetryAfter(junk, SENT_AT), junk).toBeUndefined();
    }
  });
});

describe('jwtExpiry', () => {
  it('reads a numeric exp claim and nothing else', () => {
    expect(jwtExpiry(jwt({ exp: 1_767_272_400 }))).toBe(1_767_272_400);
    expect(jwtExpiry(jwt({ exp: null }))).toBeUndefined();
    expect(jwtExpiry(`${b64url({})}.${Buffer.from('null').toString('base64url')}.s`)).toBeUndefined();
    expect(jwtExpiry('opaque-token')).toBeUndefined();
    expect(jwtExpiry('a..c')).toBeUndefined();
  });
});
