/**
 * Where token requests go: a URL fixed by the settings (`TOKEN_URL`, or the gateway's own), or the
 * one an issuer's metadata names (`ISSUER_URL`, `issuer-endpoint.ts`). The token fetch asks here
 * before each request and tells here how it failed, so it never learns which of the two it has.
 */
import { TokenFetchError } from '../errors.js';
import type { IssuerMetadata } from './issuer-metadata.js';

export interface TokenEndpoint {
  /** The token URL as known now: undefined while the issuer's metadata has not been read. */
  readonly url: string | undefined;
  /** `ISSUER_URL`, when the token URL is read from its metadata. */
  readonly issuer: string | undefined;
  /** The metadata last read, when there is an issuer and it was read. */
  readonly metadata: IssuerMetadata | undefined;
  /**
   * The token URL for the next request, reading the issuer's metadata first when it is not known
   * yet or must be read again. Rejects with a {@link TokenFetchError} naming `ISSUER_URL`.
   */
  resolve(): Promise<string>;
  /** A token request to `url` failed with `error` (the metadata may be read again). */
  failed(url: string, error: TokenFetchError): void;
}

/** The token URL the settings name: known from the start, never read again. */
export function fixedTokenEndpoint(url: string): TokenEndpoint {
  const resolved = Promise.resolve(url);
  return { url, issuer: undefined, metadata: undefined, resolve: () => resolved, failed: () => {} };
}

/**
 * `request` sent to the URL `endpoint` gives for each call, its failures told to the endpoint. A
 * failure to find the URL (the issuer's metadata unreadable) rejects the call as a failed fetch,
 * so it has the token fetch's backoff, diagnosis and metrics.
 */
export function sentTo<C, T>(
  endpoint: TokenEndpoint,
  request: (credential: C, tokenUrl: string) => Promise<T>,
): (credential: C) => Promise<T> {
  return async (credential) => {
    const url = await endpoint.resolve();
    try {
      return await request(credential, url);
    } catch (err) {
      if (err instanceof TokenFetchError) endpoint.failed(url, err);
      throw err;
    }
  };
}
