import type { Dispatcher } from 'undici';
import { request } from 'undici';
import { TokenFetchError } from '../errors.js';
import { networkFailureReason } from '../net/failure-reason.js';
import type { Config, TokenAuthMethod } from '../config.js';
import { parseTokenResponse, type TokenGrant } from './parse-response.js';

/** One set of client credentials. */
export interface Credential {
  readonly clientId: string;
  readonly clientSecret: string;
}

/** Runs one client-credentials grant (PRODUCT §5.2). Rejects with {@link TokenFetchError} only. */
export type FetchToken = (credential: Credential) => Promise<TokenGrant>;

export interface TokenFetcherOptions {
  tokenUrl: string;
  authMethod: TokenAuthMethod;
  scope: string | undefined;
  timeoutMs: number;
  defaultTtlS: number;
  /** The token endpoint's own connection pool, apart from the forwarding one. */
  dispatcher: Dispatcher;
  now: () => number;
}

/** The fetcher for the configured token endpoint. */
export function tokenFetcherFromConfig(
  config: Pick<Config, 'tokenUrl' | 'tokenAuthMethod' | 'tokenScope' | 'tokenFetchTimeoutMs' | 'tokenDefaultTtlS'>,
  dispatcher: Dispatcher,
  now: () => number,
): FetchToken {
  return createTokenFetcher({
    tokenUrl: config.tokenUrl,
    authMethod: config.tokenAuthMethod,
    scope: config.tokenScope,
    timeoutMs: config.tokenFetchTimeoutMs,
    defaultTtlS: config.tokenDefaultTtlS,
    dispatcher,
    now,
  });
}

/** A token response larger than this is not a token response. */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * RFC 6749 §2.3.1: id and secret are form-urlencoded (Appendix B) before they are joined for
 * Basic: the same encoder as the form body, which also encodes `!'()~`.
 */
function formEncode(s: string): string {
  return new URLSearchParams([['', s]]).toString().slice(1);
}

/** Creates the function that requests a token from the token endpoint with `undici`. */
export function createTokenFetcher(options: TokenFetcherOptions): FetchToken {
  const { tokenUrl, authMethod, scope, timeoutMs, defaultTtlS, dispatcher, now } = options;
  return async function fetchToken(credential) {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (authMethod === 'client_secret_basic') {
      const pair = `${formEncode(credential.clientId)}:${formEncode(credential.clientSecret)}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    } else {
      form.set('client_id', credential.clientId);
      form.set('client_secret', credential.clientSecret);
    }
    if (scope !== undefined) form.set('scope', scope);

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
      throw classify(err, timeoutMs, signal);
    }
    return parseTokenResponse(statusCode, responseHeaders, text, { defaultTtlS, sentAt });
  };
}

function classify(err: unknown, timeoutMs: number, signal: AbortSignal): TokenFetchError {
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
  return new TokenFetchError('network_error', `token endpoint unreachable (${reason})`, { cause: err });
}
