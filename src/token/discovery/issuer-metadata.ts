/**
 * Reading an issuer's metadata (RFC 8414, OpenID Connect Discovery 1.0): the RFC 8414 document
 * first, then OpenID Connect's, each checked as RFC 8414 §3.3 asks before anything in it is used.
 */
import { request, type Dispatcher } from 'undici';
import { checkUrl } from '../../config/values.js';
import { networkFailureReason } from '../../net/failure-reason.js';
import { readSmallBody } from '../../net/small-body.js';
import { IssuerMetadataError } from '../errors.js';
import { parseRetryAfter } from '../parse-response.js';
import { issuerMismatch, metadataUrls } from './well-known.js';

/** What the proxy uses of an issuer's metadata. */
export interface IssuerMetadata {
  /** The issuer, identical to `ISSUER_URL`. */
  readonly issuer: string;
  /** The document it was read from. */
  readonly documentUrl: string;
  /** Where token requests go. */
  readonly tokenEndpoint: string;
  /** `token_endpoint_auth_methods_supported`, when the metadata lists it. */
  readonly authMethods: readonly string[] | undefined;
  /** `dpop_signing_alg_values_supported` (RFC 9449 §5.1), when the metadata lists it. */
  readonly dpopAlgs: readonly string[] | undefined;
}

export interface MetadataReaderOptions {
  /** `ISSUER_URL`, as configured. */
  issuer: string;
  /** The identity provider's connections: the token endpoint's TLS, CA and egress proxy. */
  dispatcher: Dispatcher;
  /** Each document request's limit (`TOKEN_FETCH_TIMEOUT_MS`). */
  timeoutMs: number;
  /** `ALLOW_INSECURE_HTTP`: the token endpoint named follows `TOKEN_URL`'s rules. */
  allowInsecureHttp: boolean;
  /** The client proves itself with its TLS certificate: the token endpoint's mutual-TLS alias is used when named (RFC 8705 §5). */
  mutualTls: boolean;
  now: () => number;
}

/** Metadata documents are a few kilobytes; a larger answer is not one. */
const MAX_DOCUMENT_BYTES = 256 * 1024;

const UNREACHABLE = 'check the host name and port of ISSUER_URL, and HTTPS_PROXY/NO_PROXY';
const THROTTLING = 'the identity provider is throttling; the next try waits for its Retry-After';
const SERVER = "check the identity provider's status";
const ISSUER_FORMS =
  'set ISSUER_URL to the issuer the identity provider names (Keycloak: https://<host>/realms/<realm>; Okta: ' +
  "https://<org>.okta.com, or an authorization server's such as https://<org>.okta.com/oauth2/default; Entra ID: " +
  'https://login.microsoftonline.com/<tenant>/v2.0; Auth0: https://<tenant>.auth0.com/, with its trailing slash), or set ' +
  'TOKEN_URL instead';

/**
 * Why one document is not usable, and how much that says: a `final` failure (the issuer
 * unreachable, too slow, or throttling) ends the reading; after the others, the next document is
 * tried, and if it fails too, the most telling of the two is reported: a document that is there
 * but `unusable`, then the `server`'s trouble, then both `absent`.
 */
interface Failure {
  readonly error: IssuerMetadataError;
  readonly rank: 'final' | 'unusable' | 'server' | 'absent';
  /** What the document's URL answered, for the message naming both. */
  readonly said: string;
}

/**
 * Reads `ISSUER_URL`'s metadata: RFC 8414's document (the well-known path inserted before the
 * issuer's path, §3.1), else OpenID Connect Discovery's (appended to it). A document whose `issuer`
 * is not `ISSUER_URL` to the letter is not used (RFC 8414 §3.3). Rejects with
 * {@link IssuerMetadataError}, whose message names `ISSUER_URL` and the document.
 */
export async function readIssuerMetadata(options: MetadataReaderOptions): Promise<IssuerMetadata> {
  const urls = metadataUrls(options.issuer);
  const failures: Failure[] = [];
  for (const url of [urls.oauth, urls.openid]) {
    const reading = await readDocument(url, options);
    if (!('error' in reading)) return reading;
    if (reading.rank === 'final') throw reading.error;
    failures.push(reading);
  }
  const telling = failures.find((f) => f.rank === 'unusable') ?? failures.find((f) => f.rank === 'server');
  if (telling !== undefined) throw telling.error;
  const said = failures.map((f) => f.said).join(', ');
  throw new IssuerMetadataError('invalid_response', `ISSUER_URL ${options.issuer} serves no metadata: ${said}`, ISSUER_FORMS);
}

async function readDocument(url: string, options: MetadataReaderOptions): Promise<IssuerMetadata | Failure> {
  const { timeoutMs } = options;
  const of = `ISSUER_URL's metadata ${url}`;
  const fail = (rank: Failure['rank'], said: string, error: IssuerMetadataError): Failure => ({ rank, said, error });
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Dispatcher.ResponseData;
  let text: string | undefined;
  try {
    res = await request(url, {
      dispatcher: options.dispatcher,
      method: 'GET',
      headers: { accept: 'application/json' },
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    text = await readSmallBody(res.body, MAX_DOCUMENT_BYTES);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (signal.aborted || (typeof code === 'string' && /^UND_ERR_(HEADERS|BODY|CONNECT)_TIMEOUT$/.test(code))) {
      return fail(
        'final',
        'timed out',
        new IssuerMetadataError('timeout', `${of} did not answer within ${timeoutMs} ms`, UNREACHABLE, { cause: err }),
      );
    }
    const message = `${of} unreachable (${networkFailureReason(err, url.startsWith('https:'))})`;
    return fail('final', message, new IssuerMetadataError('network_error', message, UNREACHABLE, { cause: err }));
  }
  const status = res.statusCode;
  const said = `${url} answered ${status}`;
  if (status === 429) {
    const retryAfterMs = parseRetryAfter(first(res.headers['retry-after']), options.now());
    return fail('final', said, new IssuerMetadataError('rate_limited', `${of} answered 429`, THROTTLING, { status, retryAfterMs }));
  }
  if (status >= 500) return fail('server', said, new IssuerMetadataError('server_error', `${of} answered ${status}`, SERVER, { status }));
  const doc = status >= 200 && status < 300 && text !== undefined ? parseObject(text) : undefined;
  if (doc === undefined) {
    const what = status < 200 || status >= 300 ? said : `${said} with ${text === undefined ? 'a body too large' : 'no JSON object'}`;
    return fail('absent', what, new IssuerMetadataError('invalid_response', `${of}: ${what}`, ISSUER_FORMS, { status }));
  }
  const used = usedOf(doc, options);
  if (!('why' in used)) return { ...used, issuer: options.issuer, documentUrl: url };
  const error = new IssuerMetadataError('invalid_response', `${of} cannot be used: ${used.why}`, used.hint, { status });
  return fail('unusable', `${url} cannot be used`, error);
}

const NO_TOKEN_ENDPOINT = "set TOKEN_URL instead of ISSUER_URL: the token endpoint the metadata names follows TOKEN_URL's rules";

/**
 * What the proxy uses of a metadata document, or why it cannot and what to do: an issuer other
 * than `ISSUER_URL` (RFC 8414 §3.3), or no token endpoint that `TOKEN_URL` would be allowed to be.
 */
function usedOf(doc: Record<string, unknown>, options: MetadataReaderOptions): Omit<IssuerMetadata, 'issuer' | 'documentUrl'> | Unusable {
  const mismatch = issuerMismatch(doc.issuer, options.issuer);
  if (mismatch !== undefined) {
    const slashOnly = typeof doc.issuer === 'string' && mismatch.includes('trailing slash');
    const hint = slashOnly
      ? `set ISSUER_URL=${doc.issuer as string}, exactly as the identity provider writes its issuer`
      : 'check ISSUER_URL, and that nothing on the way (an egress proxy, a gateway) answers in its place';
    return { why: mismatch, hint };
  }
  // RFC 8705 §5: a client that authenticates with its certificate uses the mutual-TLS alias.
  const aliases = doc.mtls_endpoint_aliases;
  const alias =
    options.mutualTls && typeof aliases === 'object' && aliases !== null ? (aliases as Record<string, unknown>).token_endpoint : undefined;
  const [field, named] =
    typeof alias === 'string' ? ['mtls_endpoint_aliases.token_endpoint', alias] : ['token_endpoint', doc.token_endpoint];
  if (typeof named !== 'string' || named === '') return { why: 'it names no token_endpoint', hint: NO_TOKEN_ENDPOINT };
  const problems: string[] = [];
  const tokenEndpoint = checkUrl(named, `its ${field}`, options.allowInsecureHttp, problems, { trimSlash: false });
  if (tokenEndpoint === undefined) return { why: problems.join('; '), hint: NO_TOKEN_ENDPOINT };
  return {
    tokenEndpoint,
    authMethods: strings(doc.token_endpoint_auth_methods_supported),
    dpopAlgs: strings(doc.dpop_signing_alg_values_supported),
  };
}

/** Why a document cannot be used, and what to do. */
interface Unusable {
  readonly why: string;
  readonly hint: string;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A list of strings as the metadata gives it; anything else reads as not given. */
function strings(value: unknown): readonly string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? Object.freeze([...value]) : undefined;
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
