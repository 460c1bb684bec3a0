import { describe, expect, it } from 'vitest';
import type { TokenFetchError } from '../../src/core/errors.js';
import { describeTokenFailure, diagnoseTokenFailure, displayTokenUrl } from '../../src/token/diagnose.js';
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
    expect(displayTokenUrl('https://user:pw@idp.example/t')).toBe('https://idp.example/t');
    const d = diagnoseTokenFailure(fromAnswer(500, ''), 'https://user:s3cret@idp.example/t');
    expect(d.message).toContain('https://idp.example/t');
    expect(d.message).not.toContain('s3cret');
  });

  it.each([404, 405])('asks whether TOKEN_URL/BASE_URL is right after a %i', (status) => {
    const d = diagnoseTokenFailure(fromAnswer(status, 'Not Found'), URL_);
    expect(d.hint).toContain('is TOKEN_URL/BASE_URL right?');
    expect(d.credentialsRejected).toBe(false);
  });

  it.each([
    [401, { error: 'invalid_token' }],
    [401, ''],
    [400, '<html>bad</html>'],
  ])('tells a %i with %j as not looking like a token endpoint', (status, body) => {
    const d = diagnoseTokenFailure(fromAnswer(status, body), URL_);
    expect(d.hint).toContain('this does not look like a token endpoint');
    expect(d.credentialsRejected).toBe(false);
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

  it('says nothing more than the message for an unknown OAuth error code', () => {
    expect(diagnoseTokenFailure(fromAnswer(400, { error: 'something_else' }), URL_).hint).toBeUndefined();
  });

  it('puts the hint after the message in one line', () => {
    const line = describeTokenFailure(fromAnswer(404, ''), URL_);
    expect(line).toBe(`token endpoint answered 404 (token URL ${URL_}); is TOKEN_URL/BASE_URL right?`);
  });
});
