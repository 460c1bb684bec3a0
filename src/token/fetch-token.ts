import { request, type Dispatcher } from 'undici';
import { TokenFetchError } from '../core/errors.js';
import { networkFailureReason } from '../net/failure-reason.js';
import type { Config } from '../config/config.js';
import { parseTokenResponse, type TokenGrant } from './parse-response.js';
import type { ClientAuth, Credential } from './client-auth.js';

/**
 * Runs one client-credentials grant (RFC 6749 §4.4). Rejects with {@link TokenFetchError}; an
 * error the client authentication strategy throws is passed on as it is (`diagnose.ts` tells both).
 */
export type FetchToken = (credential: Credential) => Promise<TokenGrant>;

export interface TokenFetcherOptions {
  tokenUrl: string;
  /** How the client proves who it is: a strategy from `client-auth.ts`. */
  clientAuth: ClientAuth;
  scope: string | undefined;
  /** Extra form fields on every request (TOKEN_PARAMS), in order, names may repeat. */
  extraParams?: ReadonlyArray<readonly [string, string]>;
  timeoutMs: number;
  defaultTtlS: number;
  /** The token endpoint's own connection pool, apart from the forwarding one. */
  dispatcher: Dispatcher;
  now: () => number;
}

/** The fetcher for the configured token endpoint, authenticating with `clientAuth`. */
export function tokenFetcherFromConfig(
  config: Pick<Config, 'tokenUrl' | 'tokenScope' | 'tokenParams' | 'tokenFetchTimeoutMs' | 'tokenDefaultTtlS'>,
  dispatcher: Dispatcher,
  now: () => number,
  clientAuth: ClientAuth,
): FetchToken {
  return createTokenFetcher({
    tokenUrl: config.tokenUrl,
    clientAuth,
    scope: config.tokenScope,
    extraParams: config.tokenParams,
    timeoutMs: config.tokenFetchTimeoutMs,
    defaultTtlS: config.tokenDefaultTtlS,
    dispatcher,
    now,
  });
}

/** A token response larger than this is not a token response. */
const MAX_BODY_BYTES = 64 * 1024;

/** Creates the function that requests a token from the token endpoint with `undici`. */
export function createTokenFetcher(options: TokenFetcherOptions): FetchToken {
  const { tokenUrl, clientAuth, scope, timeoutMs, defaultTtlS, dispatcher, now } = options;
  const extraParams = options.extraParams ?? [];
  return async function fetchToken(credential) {
    // Called for every request, retries included: an assertion is signed or read afresh.
    const auth = await clientAuth(credential, tokenUrl);
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    for (const [k, v] of auth.form) form.append(k, v);
    if (scope !== undefined) form.set('scope', scope);
    for (const [k, v] of extraParams) form.append(k, v);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      ...auth.headers,
    };

    const sentAt = now();
    const signal = AbortSignal.timeout(timeoutMs);
    let statusCode: number;
    let responseHeaders: Record<string, string | string[] | undefined>;
    let text: string;
    try {
      const res = await request(tokenUrl, {
        dispatcher,
        method: 'POST',
        headers,
        body: form.toString(),
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      statusCode = res.statusCode;
      responseHeaders = res.headers;
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > MAX_BODY_BYTES) {
          res.body.destroy();
          throw new TokenFetchError('invalid_response', `token endpoint answered ${statusCode} with a body over ${MAX_BODY_BYTES} bytes`, {
            status: statusCode,
          });
        }
        chunks.push(chunk as Buffer);
      }
      text = Buffer.concat(chunks).toString('utf8');
    } catch (err) {
      if (err instanceof TokenFetchError) throw err;
      throw classify(err, timeoutMs, signal, tokenUrl);
    }
    return parseTokenResponse(statusCode, responseHeaders, text, { defaultTtlS, sentAt });
  };
}

function classify(err: unknown, timeoutMs: number, signal: AbortSignal, tokenUrl: string): TokenFetchError {
  const code = (err as { code?: string }).code;
  if (
    signal.aborted ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    return new TokenFetchError('timeout', `token request timed out after ${timeoutMs} ms`, { cause: err });
  }
  const reason = networkFailureReason(err);
  const host = URL.canParse(tokenUrl) ? new URL(tokenUrl).host : 'the token host';
  return new TokenFetchError('network_error', `token endpoint ${host} unreachable (${reason})`, { cause: err });
}
