/**
 * Token responses and configuration as properties: any input yields a token
 * or the typed error (`TokenFetchError`, `ConfigError`), never a throw of another kind, and the
 * secret or token never appears in the error's text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config/config.js';
import { ConfigError } from '../../src/core/errors.js';
import { redactUserinfo, withoutUserinfo } from '../../src/core/redact.js';
import { TokenFetchError } from '../../src/token/errors.js';
import { parseTokenResponse } from '../../src/token/parse-response.js';
import { FC } from './budget.js';
import { loadSettings } from '../helpers/load-settings.js';

const TOKEN = 'tok-Zq81-secret-token-value';
const SECRET = 'sek-Pw55-client-secret-value';
const NOW = Date.UTC(2026, 10, 23, 7, 0, 0);

const jwt = (claims: unknown) =>
  `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig${TOKEN}`;

/** Token endpoint answers: the RFC 6749 shapes, their near misses, and arbitrary JSON or bytes. */
const tokenField = fc.oneof(
  fc.constant(TOKEN),
  fc.constant(''),
  fc.constant(jwt({ exp: NOW / 1000 + 60 })),
  fc.constant(jwt({ exp: 'x' })),
  fc.constant(jwt({ exp: NOW / 1000 - 5 })),
  fc.constant(`${TOKEN}.${TOKEN}.${TOKEN}`),
  fc.jsonValue(),
);
const expiresIn = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.integer(),
  fc.double(),
  fc.constantFrom('3600', ' 60 ', '1e3', '-1', '0', 'NaN', '0x10', '3600.5', ''),
  fc.jsonValue(),
);
const tokenType = fc.oneof(fc.constant(undefined), fc.constantFrom('Bearer', 'bearer', 'BEARER', 'mac', 'DPoP', ''), fc.jsonValue());
const tokenBody = fc.oneof(
  fc.record({ access_token: tokenField, token_type: tokenType, expires_in: expiresIn }, { requiredKeys: [] }).map((o) => JSON.stringify(o)),
  fc
    .record(
      { error: fc.oneof(fc.string(), fc.jsonValue()), error_description: fc.oneof(fc.string(), fc.jsonValue()) },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', 'null', '[]', '{', `{"access_token":"${TOKEN}"`, '"x"', '1e400'),
);
const status = fc.oneof(fc.constantFrom(200, 201, 204, 400, 401, 403, 429, 500, 503), fc.integer({ min: 0, max: 999 }));
const retryAfter = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('120', '0', '-1', 'Wed, 21 Oct 2015 07:28:00 GMT', 'Sunday, 06-Nov-94 08:49:37 GMT', 'soon', '9'.repeat(400)),
  fc.string(),
  fc.array(fc.string(), { maxLength: 2 }),
);

describe('token responses, any input', () => {
  it('yield a usable token with a positive finite lifetime, or a TokenFetchError that never quotes the token', () => {
    fc.assert(
      fc.property(status, retryAfter, tokenBody, fc.integer({ min: 1, max: 86_400 }), (st, ra, body, ttl) => {
        let grant;
        try {
          grant = parseTokenResponse(st, { 'retry-after': ra }, body, { defaultTtlS: ttl, sentAt: NOW });
        } catch (err) {
          expect(err).toBeInstanceOf(TokenFetchError);
          const e = err as TokenFetchError;
          expect(`${e.message} ${e.oauthError ?? ''} ${e.oauthErrorDescription ?? ''}`).not.toContain(TOKEN);
          if (e.retryAfterMs !== undefined) expect(e.retryAfterMs >= 0 && e.retryAfterMs <= 300_000).toBe(true);
          return;
        }
        expect(st >= 200 && st <= 299).toBe(true);
        expect(typeof grant.accessToken === 'string' && grant.accessToken !== '').toBe(true);
        expect(Number.isFinite(grant.lifetimeMs) && grant.lifetimeMs > 0).toBe(true);
      }),
      FC,
    );
  });
});

/** A value for a setting: a good one, a near miss, or anything YAML could hold. */
const GOOD: Record<string, string[]> = {
  BASE_URL: ['https://gw.example.com', 'http://127.0.0.1:9', 'https://gw.example.com/gw/'],
  TOKEN_URL: ['https://idp.example.com/token'],
  ISSUER_URL: ['https://idp.example.com/realms/t', 'https://tenant.example.com/'],
  CLIENT_ID: ['app'],
  CLIENT_SECRET_FILE: ['/run/secret'],
  LISTEN_PORT: ['0', '8180'],
  TOKEN_REFRESH_RATIO: ['0.8'],
};
const GOOD_ENV = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'b' };
/** Places the secret may hide in: a URL's user information, the secret itself. */
const SECRET_URLS = [
  `https://u:${SECRET}@gw.example.com`,
  `ftp://u:${SECRET}@gw.example.com`,
  `https://u:${SECRET}@gw.example.com/?q#f`,
  `http://u:${SECRET}@10.0.0.1`,
  `gw:${SECRET}@x`,
];
const anyValue = fc.oneof(
  fc.constantFrom('', ' ', 'true', 'no', '-1', '1e309', '0x1f', 'NaN', '65536', '[::1]', 'not a url', 'http://', '\u0000'),
  fc.string(),
  fc.jsonValue(),
);
const settingValue = (env: string) =>
  env === 'CLIENT_SECRET'
    ? fc.constantFrom<unknown>(SECRET, ` ${SECRET}\n`, [SECRET], { value: SECRET })
    : env === 'BASE_URL' || env === 'TOKEN_URL' || env === 'ISSUER_URL'
      ? fc.oneof(fc.constantFrom(...(GOOD[env] ?? []), ...SECRET_URLS), anyValue)
      : fc.oneof(fc.constantFrom(...(GOOD[env] ?? ['x'])), anyValue);
const envArb = fc.record(
  Object.fromEntries(SETTINGS.map((s) => [s.env, settingValue(s.env).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))])),
  { requiredKeys: [] },
);
const fileArb = fc.oneof(
  fc.constant(undefined),
  fc.record(Object.fromEntries(SETTINGS.map((s) => [s.key, settingValue(s.env)])), { requiredKeys: [] }),
  fc.jsonValue(),
  fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
);
const secretFile = fc.oneof(fc.constantFrom(SECRET, `${SECRET}\n`, '', '  \n'), fc.constant(undefined));

describe('configuration, any input', () => {
  it('yields a frozen configuration or one ConfigError that never contains the secret', () => {
    fc.assert(
      fc.property(envArb, fileArb, secretFile, (env, file, content) => {
        let config;
        try {
          ({ config } = loadSettings({
            env: env as Record<string, string>,
            file: file === undefined ? undefined : { path: '/etc/tap.yaml', values: file },
            readFile: () => {
              if (content === undefined)
                throw Object.assign(new Error(`EACCES: permission denied, open '/run/secret'`), { code: 'EACCES' });
              return content;
            },
          }));
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
          expect((err as ConfigError).message).not.toContain(SECRET);
          expect((err as ConfigError).problems.length).toBeGreaterThan(0);
          return;
        }
        expect(Object.isFrozen(config)).toBe(true);
        expect(typeof config.baseUrl).toBe('string');
        expect(config.baseUrl).not.toContain(SECRET);
      }),
      FC,
    );
  });

  it('a gateway URL with a password and the wrong scheme is refused without showing the password', () => {
    for (const url of [`ftp://user:${SECRET}@gw.example.com`, `gw:${SECRET}@x`, `https://u:${SECRET}@gw.example.com/?q`]) {
      expect(() => loadSettings({ env: { BASE_URL: url, CLIENT_ID: 'a', CLIENT_SECRET: 'b' }, readFile: () => '' })).toThrow(ConfigError);
      try {
        loadSettings({ env: { BASE_URL: url, CLIENT_ID: 'a', CLIENT_SECRET: 'b' }, readFile: () => '' });
      } catch (err) {
        expect((err as ConfigError).message).toContain('BASE_URL');
        expect((err as ConfigError).message).not.toContain(SECRET);
      }
    }
  });
});

/** A password no message may show: letters, digits and what a hand-written password holds, `@` included. */
/** Generated passwords hold `/`, `+` and `=` (base64), and hand-made ones `?`, `#`, `@` or a space, unencoded. */
const password = fc.stringMatching(/^[A-Za-z0-9!$&'()*+,;=._~@%/?#: \t-]{1,24}$/).map((p) => `Pw${p}`);
/** URLs as a hand may write them: any scheme, none to four slashes after it, user information with the password. */
const writtenUrl = fc
  .record({
    scheme: fc.oneof(
      fc.constantFrom('http', 'https', 'redis', 'rediss', 'ftp', 'socks', 'socks5', 'gw'),
      fc.stringMatching(/^[a-z][a-z0-9+.-]{0,8}$/),
    ),
    slashes: fc.integer({ min: 0, max: 4 }),
    user: fc.stringMatching(/^[A-Za-z0-9._-]{0,8}$/),
    password,
    host: fc.constantFrom('host', 'gw.example.com', '127.0.0.1', '[::1]', ''),
    rest: fc.constantFrom('', ':6379', '/0', ':3128/x', '?q=1', '#f', '/path?x'),
  })
  .map((u) => ({ ...u, url: `${u.scheme}:${'/'.repeat(u.slashes)}${u.user}:${u.password}@${u.host}${u.rest}` }));
/** The settings that take a URL, and the proxy variables. */
const URL_SETTINGS = ['BASE_URL', 'TOKEN_URL', 'ISSUER_URL', 'HTTPS_PROXY', 'HTTP_PROXY', 'TOKEN_STORE_URL'];

describe('a URL with user information, however malformed', () => {
  it('is never shown with its password, by either redaction or in any configuration error', () => {
    fc.assert(
      fc.property(writtenUrl, fc.constantFrom(...URL_SETTINGS), ({ url, password: pw }, env) => {
        expect(withoutUserinfo(url)).not.toContain(pw);
        expect(redactUserinfo(`got "${url}" and "x"`)).not.toContain(pw);
        // Not quoted, a URL in a text ends at white space: a password holding one is beyond saving there.
        if (!/\s/.test(pw)) expect(redactUserinfo(`got "${url}" and ${url}`)).not.toContain(pw);
        try {
          loadSettings({ env: { ...GOOD_ENV, [env]: url }, readFile: () => '' });
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
          expect((err as ConfigError).message).not.toContain(pw);
        }
      }),
      FC,
    );
  });
});
