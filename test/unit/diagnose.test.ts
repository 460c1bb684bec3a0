import { describe, expect, it } from 'vitest';
import { IssuerMetadataError, TokenFetchError, TokenRefusedError } from '../../src/token/errors.js';
import { assertionFromFile } from '../../src/token/client-auth/client-assertion-file.js';
import { describeFetchFailure, describeTokenFailure, diagnoseTokenFailure, displayTokenUrl } from '../../src/token/diagnose.js';
import { parseTokenResponse } from '../../src/token/parse-response.js';

const URL_ = 'https://idp.example/oauth2/token';

function fromAnswer(status: number, body: unknown): TokenFetchError {
  try {
    parseTokenResponse(status, {}, typeof body === 'string' ? body : JSON.stringify(body), { defaultTtlS: 300, sentAt: 0 });
  } catch (err) {
    return err as TokenFetchError;
  }
  throw new Error('expected a failure');
}

describe('diagnoseTokenFailure', () => {
  it('names the token URL without its userinfo', () => {
    expect(displayTokenUrl('https://user:pw@idp.example/t')).toBe('https://***@idp.example/t');
    const d = diagnoseTokenFailure(fromAnswer(500, ''), 'https://user:s3cret@idp.example/t');
    expect(d.message).toContain('https://***@idp.example/t');
    expect(d.message).not.toContain('s3cret');
  });

  it.each([404, 405])('asks whether TOKEN_URL/BASE_URL is right after a %i', (status) => {
    const d = diagnoseTokenFailure(fromAnswer(status, 'Not Found'), URL_);
    expect(d.hint).toContain('is TOKEN_URL/BASE_URL right?');
    expect(d.credentialsRejected).toBe(false);
  });

  it('tells a 401 invalid_token (what a resource server answers) as not looking like a token endpoint', () => {
    const d = diagnoseTokenFailure(fromAnswer(401, { error: 'invalid_token' }), URL_);
    expect(d.hint).toContain('this does not look like a token endpoint');
    expect(d.credentialsRejected).toBe(false);
  });

  it.each([
    [403, ''],
    [401, ''],
    [400, '<html>bad</html>'],
    [403, '{}'],
  ])('tells a %i with %j as a refusal of the client, the credentials first, never as no token endpoint', (status, body) => {
    const error = fromAnswer(status, body);
    expect(error.outcome).toBe('rejected');
    const d = diagnoseTokenFailure(error, URL_);
    expect(d.hint).toMatch(/^the token endpoint refused the client without an error code: check the client credentials first: CLIENT_ID/);
    expect(d.hint).not.toContain('token endpoint:');
    expect(d.hint).not.toContain('does not look like');
    expect(d.credentialsRejected).toBe(true);
  });

  it('names the settings the refused request was made of, and TOKEN_SCOPE only when none was set', () => {
    const refused = (scopeSet: boolean, alternative?: string) =>
      new TokenRefusedError(fromAnswer(403, ''), {
        credentials: 'CLIENT_ID and the key (CLIENT_ASSERTION_KEY_FILE)',
        alternative,
        scopeSet,
      });
    const withScope = diagnoseTokenFailure(refused(true), URL_).hint!;
    expect(withScope).toContain('check the client credentials first: CLIENT_ID and the key (CLIENT_ASSERTION_KEY_FILE)');
    expect(withScope).not.toContain('TOKEN_SCOPE');
    const without = diagnoseTokenFailure(refused(false, 'try TOKEN_AUTH_METHOD=client_secret_post'), URL_).hint!;
    expect(without.indexOf('CLIENT_ID')).toBeLessThan(without.indexOf('TOKEN_SCOPE is not set'));
    expect(without).toContain('some identity providers refuse a request without a scope the same way');
    expect(without).toMatch(/; try TOKEN_AUTH_METHOD=client_secret_post$/);
  });

  it.each([
    ['scope_invalid', 'invalid_scope', 'TOKEN_SCOPE'],
    ['INVALID_CLIENT', 'invalid_client', 'CLIENT_ID'],
    ['invalidGrant', 'invalid_grant', 'client credentials'],
  ])('shows %s as given, read as %s', (code, reading, lookAt) => {
    const account = describeFetchFailure(fromAnswer(400, { error: code }), URL_);
    expect(account.outcome).toBe('rejected');
    expect(account.text).toContain(`token endpoint answered 400 ${code}`);
    expect(account.text).toContain(`; ${code} (read as ${reading}): `);
    expect(account.text).toContain(lookAt);
  });

  it.each([
    ['invalid_client', 'CLIENT_ID', true],
    ['invalid_scope', 'TOKEN_SCOPE', false],
    ['invalid_target', 'TOKEN_PARAMS', false],
    ['unauthorized_client', 'allowed grants at the IdP', false],
    ['unsupported_grant_type', 'token URL', false],
    ['invalid_request', 'token URL', false],
  ])('tells %s as what to look at (%s), with the description', (error, lookAt, credentialsRejected) => {
    const d = diagnoseTokenFailure(fromAnswer(400, { error, error_description: 'said the IdP' }), URL_);
    expect(d.hint).toContain(lookAt);
    expect(d.message).toContain('said the IdP');
    expect(d.message).toContain(URL_);
    expect(d.credentialsRejected).toBe(credentialsRejected);
  });

  it('shows an error code no RFC knows as given, and the credentials first', () => {
    const d = diagnoseTokenFailure(fromAnswer(403, { error: 'something_else' }), URL_);
    expect(d.message).toContain('token endpoint answered 403 something_else');
    expect(d.hint).toMatch(/^something_else is no RFC 6749 error code: check the client credentials first/);
    expect(d.hint).not.toContain('read as');
  });

  it('puts the hint after the message in one line', () => {
    const line = describeTokenFailure(fromAnswer(404, ''), URL_);
    expect(line).toBe(`token endpoint answered 404 (token URL ${URL_}); is TOKEN_URL/BASE_URL right?`);
  });
});

/** What the client_assertion_file strategy throws for a file holding `content` at `nowS`. */
async function assertionFailure(content: string | Error, nowS = 2_000_000_000): Promise<unknown> {
  const strategy = assertionFromFile({
    path: '/var/run/secrets/token',
    read: () => {
      if (content instanceof Error) throw content;
      return content;
    },
    assertionType: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    now: () => nowS * 1000,
  });
  try {
    await strategy({ clientId: 'app', clientSecret: '' }, URL_);
  } catch (err) {
    return err;
  }
  throw new Error('expected the strategy to refuse');
}

const jwt = (claims: object): string => `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

describe('describeFetchFailure', () => {
  it('tells an expired client assertion as what it is: the file, its expiry, and that a rotated file is tried at once', async () => {
    const err = await assertionFailure(jwt({ iss: 'https://cluster', exp: 1_999_999_000 }));
    const account = describeFetchFailure(err, URL_);
    expect(account.outcome).toBe('network_error');
    expect(account.text).toContain('client assertion in /var/run/secrets/token expired at 2033-05-18T03:16:40.000Z');
    expect(account.text).toContain('a rotated file is tried at once');
    expect(account.text).not.toContain('host name');
    expect(account.text).not.toContain('HTTPS_PROXY');
    // Never sent, so the token URL is not what to check.
    expect(account.text).not.toContain(URL_);
    expect(diagnoseTokenFailure(err, URL_).hint).toContain('a rotated file is tried at once');
  });

  it('tells an unreadable assertion file by its path and the reason, not as an unreachable host', async () => {
    const missing = Object.assign(new Error('no such file'), { code: 'ENOENT' });
    const account = describeFetchFailure(await assertionFailure(missing), URL_);
    expect(account).toMatchObject({ outcome: 'network_error' });
    expect(account.text).toContain('client assertion file /var/run/secrets/token cannot be used (ENOENT)');
    expect(account.text).not.toContain('host name');
  });

  it('keeps pointing an unreachable token endpoint at the host, port and egress proxy settings', () => {
    const account = describeFetchFailure(
      new TokenFetchError('network_error', 'token endpoint idp.example unreachable (ECONNREFUSED)'),
      URL_,
    );
    expect(account.outcome).toBe('network_error');
    expect(account.text).toBe(
      `token endpoint idp.example unreachable (ECONNREFUSED) (token URL ${URL_}); check the host name and port of TOKEN_URL/BASE_URL, and HTTPS_PROXY/NO_PROXY`,
    );
  });

  it('takes any other error as a network_error quoting its message, without blaming the host', () => {
    const account = describeFetchFailure(new TypeError('key.sign is not a function'), URL_);
    expect(account.outcome).toBe('network_error');
    expect(account.text).toBe(`token request failed (key.sign is not a function) (token URL ${URL_})`);
    expect(describeFetchFailure('a string', URL_).text).toContain('token request failed (a string)');
  });

  it('gives the metric outcome and the same line as the log hint for an answer of the endpoint', () => {
    const account = describeFetchFailure(fromAnswer(400, { error: 'invalid_scope', error_description: 'no' }), URL_);
    expect(account.outcome).toBe('rejected');
    expect(account.text).toContain('check TOKEN_SCOPE');
  });
});

describe('a failure where ISSUER_URL names the token endpoint', () => {
  const ISSUER = 'https://kc.example/realms/t';
  const discovered = { url: 'https://kc.example/realms/t/protocol/openid-connect/token', issuer: ISSUER };

  it('shows an issuer metadata error whole, with its own hint, and no token URL', () => {
    const error = new IssuerMetadataError(
      'network_error',
      `ISSUER_URL's metadata ${ISSUER} unreachable (ECONNREFUSED)`,
      'check ISSUER_URL',
    );
    for (const endpoint of [{ url: undefined, issuer: ISSUER }, discovered]) {
      expect(describeFetchFailure(error, endpoint)).toEqual({
        outcome: 'network_error',
        text: `ISSUER_URL's metadata ${ISSUER} unreachable (ECONNREFUSED); check ISSUER_URL`,
      });
    }
  });

  it('points a 404 or an unreachable token endpoint at ISSUER_URL and the metadata read again, not at TOKEN_URL', () => {
    const notFound = diagnoseTokenFailure(fromAnswer(404, ''), discovered);
    expect(notFound.message).toBe(`token endpoint answered 404 (token URL ${discovered.url})`);
    expect(notFound.hint).toContain('read again at most once a minute');
    expect(notFound.hint).toContain('is ISSUER_URL right?');
    expect(notFound.hint).not.toContain('TOKEN_URL');
    const unreachable = diagnoseTokenFailure(new TokenFetchError('network_error', 'token endpoint kc.example unreachable'), discovered);
    expect(unreachable.hint).toContain("the token endpoint ISSUER_URL's metadata names");
    expect(unreachable.hint).not.toContain('TOKEN_URL');
    expect(diagnoseTokenFailure(fromAnswer(401, { error: 'invalid_token' }), discovered).hint).not.toContain('BASE_URL');
  });

  it('tells a refused client as with any token URL: the credentials first', () => {
    expect(diagnoseTokenFailure(fromAnswer(401, { error: 'invalid_client' }), discovered).credentialsRejected).toBe(true);
  });
});
