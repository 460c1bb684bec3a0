import { describe, expect, it } from 'vitest';
import { issuerMismatch, metadataUrls } from '../../src/token/discovery/well-known.js';

describe('the metadata URLs of an issuer', () => {
  it.each([
    // RFC 8414 §3.1's own example, then the forms identity providers give.
    [
      'https://example.com/issuer1',
      'https://example.com/.well-known/oauth-authorization-server/issuer1',
      'https://example.com/issuer1/.well-known/openid-configuration',
    ],
    [
      'https://kc.example.com/realms/tickets',
      'https://kc.example.com/.well-known/oauth-authorization-server/realms/tickets',
      'https://kc.example.com/realms/tickets/.well-known/openid-configuration',
    ],
    [
      'https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0',
      'https://login.microsoftonline.com/.well-known/oauth-authorization-server/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0',
      'https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0/.well-known/openid-configuration',
    ],
    [
      'http://127.0.0.1:8080/t/a',
      'http://127.0.0.1:8080/.well-known/oauth-authorization-server/t/a',
      'http://127.0.0.1:8080/t/a/.well-known/openid-configuration',
    ],
  ])('inserts the well-known prefix before the path of %s (RFC 8414) and appends the OpenID suffix to it', (issuer, oauth, openid) => {
    expect(metadataUrls(issuer)).toEqual({ oauth, openid });
  });

  it('reads the same documents for an issuer without a path, with and without its trailing slash', () => {
    const expected = {
      oauth: 'https://tenant.auth0.com/.well-known/oauth-authorization-server',
      openid: 'https://tenant.auth0.com/.well-known/openid-configuration',
    };
    expect(metadataUrls('https://tenant.auth0.com/')).toEqual(expected);
    expect(metadataUrls('https://tenant.auth0.com')).toEqual(expected);
  });

  it('removes the terminating slash of a path before inserting or appending', () => {
    expect(metadataUrls('https://example.okta.com/oauth2/default/')).toEqual({
      oauth: 'https://example.okta.com/.well-known/oauth-authorization-server/oauth2/default',
      openid: 'https://example.okta.com/oauth2/default/.well-known/openid-configuration',
    });
  });

  it('keeps a port that is not the default, and drops one that is', () => {
    expect(metadataUrls('https://idp.example:8443/a').oauth).toBe('https://idp.example:8443/.well-known/oauth-authorization-server/a');
    expect(metadataUrls('https://idp.example:443/a').oauth).toBe('https://idp.example/.well-known/oauth-authorization-server/a');
  });
});

describe('the issuer a document names', () => {
  it('is accepted when it is ISSUER_URL to the letter', () => {
    expect(issuerMismatch('https://kc.example.com/realms/tickets', 'https://kc.example.com/realms/tickets')).toBeUndefined();
    expect(issuerMismatch('https://tenant.auth0.com/', 'https://tenant.auth0.com/')).toBeUndefined();
  });

  it('is refused when it differs by a trailing slash only, showing both values and saying so', () => {
    const why = issuerMismatch('https://tenant.auth0.com/', 'https://tenant.auth0.com');
    expect(why).toBe(
      'it names the issuer "https://tenant.auth0.com/", not ISSUER_URL "https://tenant.auth0.com": they differ by the trailing ' +
        'slash only, and an issuer must be identical (RFC 8414 §3.3)',
    );
    expect(issuerMismatch('https://kc.example.com/realms/t', 'https://kc.example.com/realms/t/')).toContain('trailing slash only');
  });

  it('is refused when it is another issuer, or differs in letter case', () => {
    expect(issuerMismatch('https://evil.example', 'https://idp.example')).toBe(
      'it names the issuer "https://evil.example", not ISSUER_URL "https://idp.example", and an issuer must be identical (RFC 8414 §3.3)',
    );
    expect(issuerMismatch('https://IDP.example', 'https://idp.example')).not.toContain('trailing slash');
    expect(issuerMismatch('https://idp.example/a', 'https://idp.example/b')).toBeDefined();
  });

  it('is refused when the document names none', () => {
    for (const found of [undefined, '', 42, null, ['https://idp.example']]) {
      expect(issuerMismatch(found, 'https://idp.example')).toBe('it names no issuer');
    }
  });
});
