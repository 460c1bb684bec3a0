import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadPathError, NotProxiedError } from '../../src/core/errors.js';
import { checkTarget } from '../../src/proxy/path-guard.js';

const forwarded = [
  '/api/v1',
  '/api/v1/',
  '/api/v1/tickets',
  '/api/v1/tickets/',
  '/api/v1/tickets/T-1',
  '/api/v1/tickets?x=../..%2f',
  '/api/v1/tickets?redirect=http://host/a\\b&q=%00',
  '/api/v1/a.b/c',
  '/api/v1/tickets/a%20b',
  '/api/v1/tickets/caf%C3%A9',
  '/api/v1/...',
  '/api/v1/oauth2x',
  '/api/v1/tickets/oauth2/token',
];

const badPath = [
  '/api/v1/../x',
  '/api/v1/..',
  '/api/v1/./x',
  '/api/v1/.',
  '/api/v1/%2e%2e/x',
  '/api/v1/%2E%2E/x',
  '/api/v1/.%2e/x',
  '/api/v1/%2E/x',
  '/api/v1/a%2fb',
  '/api/v1/a%2Fb',
  '/api/v1/a%5cb',
  '/api/v1/a%5Cb',
  '/api/v1/a\\b',
  '/api/v1/a%00',
  '/api/v1//x',
  '/api/v1/..;/x',
  '/api/v1/.;x/y',
  '/api/v1/a%zz',
  '/api/v2/../v1/x',
  '/../api/v1/x',
  'http://host/api/v1/x',
  'api/v1/x',
  '*',
  '/api/v1/oauth2#/token',
  '/api/v1/..#x',
  '/api/v1/tickets#',
  '/api/v1/tickets?q=a#b',
];

const notProxied = [
  '/',
  '/api',
  '/api/',
  '/api/v10',
  '/api/v1x/tickets',
  '/api/v2/x',
  '/metrics',
  '/API/v1/tickets',
  '/api/v1/oauth2',
  '/api/v1/oauth2/',
  '/api/v1/oauth2/token',
  '/api/v1/oauth2/token?grant_type=client_credentials',
  '/api/v1/OAuth2/token',
  '/api/v1/%6fauth2/token',
  '/api/v1/%4F%41uth2/token',
  '/api/v1/oauth2;x/token',
  '/api/v1/oauth2;jsessionid=1',
  '/api/v1/oauth2%3B/token',
];

describe('checkTarget', () => {
  it.each(forwarded)('forwards %s', (target) => {
    expect(checkTarget(target)).toBeUndefined();
  });

  it.each(badPath)('answers bad_path for %s', (target) => {
    const err = checkTarget(target);
    expect(err).toBeInstanceOf(BadPathError);
    expect(err?.code).toBe('bad_path');
  });

  it.each(notProxied)('answers not_proxied for %s', (target) => {
    const err = checkTarget(target);
    expect(err).toBeInstanceOf(NotProxiedError);
    expect(err?.code).toBe('not_proxied');
  });
});

describe('a raw # in the target', () => {
  it('is refused as bad_path wherever it stands, query included', () => {
    const part = fc.stringMatching(/^[A-Za-z0-9._~%/?=&;-]{0,12}$/);
    fc.assert(
      fc.property(part, part, (before, after) => {
        expect(checkTarget(`/api/v1/${before}#${after}`)).toBeInstanceOf(BadPathError);
      }),
    );
  });
});
