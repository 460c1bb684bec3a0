import { request, type Dispatcher } from 'undici';
import { answeredWithoutTls, networkFailureReason, NOT_TLS_REASON } from '../net/failure-reason.js';
import { readSmallBody } from '../net/small-body.js';
import type { Config } from '../config/config.js';
import { parseTokenResponse, type TokenGrant } from './parse-response.js';
import type { ClientAuth, ClientAuthParts, Credential } from './client-auth/index.js';
import type { DpopClient } from './dpop/index.js';
import { sentTo, type TokenEndpoint } from './discovery/index.js';
import { DpopBearerError, TokenFetchError, TokenRefusedError } from './errors.js';

/**
 * Runs one client-credentials grant (RFC 6749 §4.4). Rejects with {@link TokenFetchError}; an
 * error the client authentication strategy throws is passed on as it is (`diagnose.ts` tells both).
 */
export type FetchToken = (credential: Credential) => Promise<TokenGrant>;

/** Runs one client-credentials grant at `tokenUrl`, as {@link FetchToken} does. */
export type RequestToken = (credential: Credential, tokenUrl: string) => Promise<TokenGrant>;

/** How token requests are made, wherever they are sent. */
export interface TokenRequestOptions {
  /** How the client proves who it is, and how a refusal is explained: its method's (`client-auth/`). */
  clientAuth: ClientAuth;
  scope: string | undefined;
  /** Extra form fields on every request (TOKEN_PARAMS), in order, names may repeat. */
  extraParams?: ReadonlyArray<readonly [string, string]>;
  timeoutMs: number;
  defaultTtlS: number;
  /** The token endpoint's own connection pool, apart from the forwarding one. */
  dispatcher: Dispatcher;
  now: () => number;
  /** With `DPOP` on or required: every token request carries a proof (RFC 9449 §5). */
  dpop?: DpopClient | undefined;
}

/** Token requests made as `TokenRequestOptions` say, all sent to `tokenUrl`. */
export interface TokenFetcherOptions extends TokenRequestOptions {
  tokenUrl: string;
}

/** What a fetcher is made from: the settings, where its requests go, and how they are authenticated. */
export interface ConfiguredFetcherOptions {
  settings: Pick<Config, 'tokenScope' | 'tokenParams' | 'tokenFetchTimeoutMs' | 'tokenDefaultTtlS'>;
  /** `TOKEN_URL`, or the one `ISSUER_URL`'s metadata names: it says which, for every request. */
  endpoint: TokenEndpoint;
  /** The identity provider's connections. */
  dispatcher: Dispatcher;
  now: () => number;
  clientAuth: ClientAuth;
  dpop?: DpopClient | undefined;
}

/** The fetcher for a token endpoint, as the settings configure it, authenticating with `clientAuth`. */
export function tokenFetcher(options: ConfiguredFetcherOptions): FetchToken {
  const { settings, endpoint, dispatcher, now, clientAuth, dpop } = options;
  const request = createTokenRequester({
    dpop,
    clientAuth,
    scope: settings.tokenScope,
    extraParams: settings.tokenParams,
    timeoutMs: settings.tokenFetchTimeoutMs,
    defaultTtlS: settings.tokenDefaultTtlS,
    dispatcher,
    now,
  });
  // A token URL the settings name is the same for every request: nothing to ask or tell the endpoint.
  const fixed = endpoint.issuer === undefined ? endpoint.url : undefined;
  return fixed === undefined ? sentTo(endpoint, request) : (credential) => request(credential, fixed);
}

/** A token response larger than this is not a token response. */
const MAX_BODY_BYTES = 64 * 1024;

interface Answer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Sends one token request and reads its whole answer; network failures become {@link TokenFetchError}. */
async function send(options: TokenRequestOptions, tokenUrl: string, headers: Record<string, string>, body: string): Promise<Answer> {
  const { timeoutMs, dispatcher } = options;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await request(tokenUrl, {
      dispatcher,
      method: 'POST',
      headers,
      body,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await readSmallBody(res.body, MAX_BODY_BYTES);
    if (text === undefined) {
      const message = `token endpoint answered ${res.statusCode} with a body over ${MAX_BODY_BYTES} bytes`;
      throw new TokenFetchError('invalid_response', message, { status: res.statusCode });
    }
    return { statusCode: res.statusCode, headers: res.headers, text };
  } catch (err) {
    if (err instanceof TokenFetchError) throw err;
    throw classify(err, timeoutMs, signal, tokenUrl);
  }
}

/** Creates the function that requests a token from the token endpoint `options.tokenUrl`, as {@link createTokenRequester} does. */
export function createTokenFetcher(options: TokenFetcherOptions): FetchToken {
  const request = createTokenRequester(options);
  return (credential) => request(credential, options.tokenUrl);
}

/**
 * Creates the function that requests a token from a token endpoint with `undici`. With DPoP,
 * each request carries a proof signed with the key current when the fetch began (the token is
 * bound to it); an answer `use_dpop_nonce` with a `DPoP-Nonce` is retried at once with that nonce,
 * once, within the same fetch (RFC 9449 §8).
 */
export function createTokenRequester(options: TokenRequestOptions): RequestToken {
  const { clientAuth, scope, defaultTtlS, now, dpop } = options;
  const extraParams = options.extraParams ?? [];
  return async function requestToken(credential, tokenUrl) {
    const key = dpop?.prover.key();
    for (let attempt = 0; ; attempt++) {
      // Called for every request, retries included: an assertion is signed or read afresh.
      const auth = await clientAuth.authenticate(credential, tokenUrl);
      const form = new URLSearchParams({ grant_type: 'client_credentials' });
      for (const [k, v] of auth.form) form.append(k, v);
      if (scope !== undefined) form.set('scope', scope);
      for (const [k, v] of extraParams) form.append(k, v);
      const headers: Record<string, string> = {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        ...auth.headers,
      };
      if (dpop !== undefined) headers.dpop = dpop.tokenRequestProof(tokenUrl, key!);
      const sentAt = now();
      const answer = await send(options, tokenUrl, headers, form.toString());
      dpop?.rememberTokenNonce(tokenUrl, answer.headers['dpop-nonce']);
      let grant: TokenGrant;
      try {
        const secrets = sentSecrets(credential, auth, headers);
        grant = parseTokenResponse(answer.statusCode, answer.headers, answer.text, {
          defaultTtlS,
          sentAt,
          dpop: dpop !== undefined,
          secrets,
        });
      } catch (err) {
        if (dpop !== undefined && attempt === 0 && asksForTokenNonce(err, answer)) {
          dpop.tokenNonceRequested();
          continue;
        }
        // A refusal keeps what the request was made of: the diagnosis names those settings first.
        if (err instanceof TokenFetchError && err.outcome === 'rejected') {
          const { credentials, alternative } = clientAuth.explainRefusal(credential);
          throw new TokenRefusedError(err, { credentials, alternative, scopeSet: scope !== undefined });
        }
        throw err;
      }
      if (dpop === undefined) return grant;
      if (grant.tokenType === 'DPoP') return { ...grant, dpopKey: key! };
      if (dpop.mode === 'required') throw new DpopBearerError(answer.statusCode);
      dpop.bearerAnswered();
      return grant;
    }
  };
}

/** Form fields that name rather than prove: a provider may quote them. */
const NAMING_FIELDS = new Set(['client_id', 'client_assertion_type']);

/**
 * What a token request carried that proves the client: the secret, every form field of the
 * client's proof but those that only name it (an assertion, a secret), and every header it added
 * (Basic credentials, whole and as their base64, a DPoP proof).
 */
function sentSecrets(credential: Credential, auth: ClientAuthParts, headers: Record<string, string>): string[] {
  const secrets = [credential.clientSecret];
  for (const [k, v] of auth.form) if (!NAMING_FIELDS.has(k)) secrets.push(v);
  for (const [k, v] of Object.entries(headers)) {
    if (k === 'content-type' || k === 'accept') continue;
    secrets.push(v, v.replace(/^\S+\s+/, ''));
  }
  return secrets;
}

/** RFC 9449 §8: a `400` `use_dpop_nonce` that carries the nonce to use. */
function asksForTokenNonce(err: unknown, answer: Answer): boolean {
  return (
    err instanceof TokenFetchError &&
    answer.statusCode === 400 &&
    err.oauthError === 'use_dpop_nonce' &&
    answer.headers['dpop-nonce'] !== undefined
  );
}

function classify(err: unknown, timeoutMs: number, signal: AbortSignal, tokenUrl: string): TokenFetchError {
  const code = (err as { code?: string }).code;
  if (signal.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new TokenFetchError('timeout', `token request timed out after ${timeoutMs} ms`, { cause: err });
  }
  const host = URL.canParse(tokenUrl) ? new URL(tokenUrl).host : 'the token host';
  // Reached, but not speaking TLS: not "unreachable", and the host name and port are right.
  if (answeredWithoutTls(err)) return new TokenFetchError('network_error', `token endpoint ${host} ${NOT_TLS_REASON}`, { cause: err });
  const reason = networkFailureReason(err, tokenUrl.startsWith('https:'));
  return new TokenFetchError('network_error', `token endpoint ${host} unreachable (${reason})`, { cause: err });
}
