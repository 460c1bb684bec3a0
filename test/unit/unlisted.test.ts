import { describe, expect, it } from 'vitest';
import type { TokenAuthMethod } from '../../src/config/config.js';
import { unlistedSettings, type IssuerMetadata } from '../../src/token/discovery/index.js';

const metadata = (authMethods?: string[], dpopAlgs?: string[]): IssuerMetadata => ({
  issuer: 'https://idp.example',
  documentUrl: 'https://idp.example/.well-known/openid-configuration',
  tokenEndpoint: 'https://idp.example/token',
  authMethods,
  dpopAlgs,
});
const method = (tokenAuthMethod: TokenAuthMethod) => ({ tokenAuthMethod });

describe('what the metadata lists without the client configuration', () => {
  it('names TOKEN_AUTH_METHOD when token_endpoint_auth_methods_supported lists others only', () => {
    expect(unlistedSettings(metadata(['client_secret_basic', 'private_key_jwt']), method('client_secret_post'), undefined)).toEqual([
      "ISSUER_URL's metadata lists token_endpoint_auth_methods_supported client_secret_basic, private_key_jwt, without " +
        'TOKEN_AUTH_METHOD=client_secret_post: the token endpoint is likely to refuse the client; set TOKEN_AUTH_METHOD to a method it ' +
        'lists and the client is registered with',
    ]);
  });

  it('says nothing when the method is listed, or when the metadata gives no list', () => {
    expect(unlistedSettings(metadata(['client_secret_post', 'tls_client_auth']), method('tls_client_auth'), undefined)).toEqual([]);
    expect(unlistedSettings(metadata(undefined), method('client_secret_jwt'), undefined)).toEqual([]);
  });

  it('says nothing of an assertion file, whose method has no registered name to look for', () => {
    expect(unlistedSettings(metadata(['private_key_jwt']), method('client_assertion_file'), undefined)).toEqual([]);
  });

  it("names the DPoP proofs' algorithm when dpop_signing_alg_values_supported lists others only, with DPoP on", () => {
    const warnings = unlistedSettings(metadata(undefined, ['ES256', 'EdDSA']), method('client_secret_post'), 'PS256');
    expect(warnings).toEqual([
      "ISSUER_URL's metadata lists dpop_signing_alg_values_supported ES256, EdDSA, without PS256, the DPoP proofs' algorithm: the " +
        'token endpoint is likely to refuse the proofs; set DPOP_ALG, or a DPOP_KEY_FILE of a type it lists',
    ]);
    expect(unlistedSettings(metadata(undefined, ['ES256', 'EdDSA']), method('client_secret_post'), 'ES256')).toEqual([]);
    expect(unlistedSettings(metadata(undefined, ['ES256']), method('client_secret_post'), undefined)).toEqual([]);
  });
});
