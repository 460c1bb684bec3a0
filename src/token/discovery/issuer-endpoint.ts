/**
 * The token endpoint an issuer's metadata names (`ISSUER_URL`): read before the first token
 * request, and read again when a request there fails as if the endpoint had moved.
 */
import type { Clock } from '../../core/clock.js';
import type { Log } from '../../core/log.js';
import { ClientAssertionError, type TokenFetchError } from '../errors.js';
import type { IssuerMetadata } from './issuer-metadata.js';
import type { TokenEndpoint } from './token-endpoint.js';

/** The metadata is read again at most this often. */
export const REREAD_INTERVAL_MS = 60_000;

export interface IssuerEndpointOptions {
  /** `ISSUER_URL`. */
  issuer: string;
  /** Reads the metadata once (`readIssuerMetadata`); rejects with an `IssuerMetadataError`. */
  read: () => Promise<IssuerMetadata>;
  clock: Clock;
  log: Log;
  /** Called with every metadata read, the first one included (the start-up warnings). */
  onRead?: ((metadata: IssuerMetadata) => void) | undefined;
}

/**
 * The token endpoint `ISSUER_URL`'s metadata names. Until the metadata has been read once, every
 * {@link TokenEndpoint.resolve} reads it (one read at a time, shared by concurrent callers): the
 * token fetch's backoff paces the tries. Once read, a token request that fails with a
 * `network_error` or a 404 marks it stale (identity providers move endpoints), and the next
 * resolve reads it again, at most once every {@link REREAD_INTERVAL_MS}. A read again that fails
 * keeps the endpoint known before: it may still answer, and a token request will tell.
 */
export function issuerTokenEndpoint(options: IssuerEndpointOptions): TokenEndpoint {
  const { issuer, clock, log } = options;
  let known: IssuerMetadata | undefined;
  let reading: Promise<string> | undefined;
  let stale = false;
  let lastRereadAt = -Infinity;

  const read = (): Promise<string> => {
    reading ??= options
      .read()
      .then((metadata) => {
        const before = known;
        known = metadata;
        if (before === undefined) {
          log.info(
            { issuer, metadata: metadata.documentUrl, tokenUrl: metadata.tokenEndpoint },
            'token endpoint read from the issuer metadata',
          );
        } else if (before.tokenEndpoint !== metadata.tokenEndpoint) {
          log.warn(
            { issuer, previous: before.tokenEndpoint, tokenUrl: metadata.tokenEndpoint },
            'the issuer metadata names a new token endpoint',
          );
        }
        options.onRead?.(metadata);
        return metadata.tokenEndpoint;
      })
      .catch((err: unknown) => {
        if (known === undefined) throw err;
        const reason = err instanceof Error ? err.message : String(err);
        log.warn(
          { issuer, tokenUrl: known.tokenEndpoint, reason },
          'the issuer metadata could not be read again; the token endpoint it named stays in use',
        );
        return known.tokenEndpoint;
      })
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };

  return {
    get url() {
      return known?.tokenEndpoint;
    },
    issuer,
    get metadata() {
      return known;
    },
    resolve() {
      if (reading !== undefined || known === undefined) return read();
      const now = clock.now();
      if (stale && now - lastRereadAt >= REREAD_INTERVAL_MS) {
        stale = false;
        lastRereadAt = now;
        return read();
      }
      return Promise.resolve(known.tokenEndpoint);
    },
    failed(url: string, error: TokenFetchError) {
      // An assertion that could not be sent says nothing of where the endpoint is.
      if (url !== known?.tokenEndpoint || error instanceof ClientAssertionError) return;
      if (error.outcome === 'network_error' || error.status === 404) stale = true;
    },
  };
}
