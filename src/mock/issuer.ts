/**
 * The mock as an OAuth 2.0 / OpenID Connect issuer: its metadata at RFC 8414's well-known path
 * (inserted before the issuer's path, §3.1) and at OpenID Connect Discovery's (appended to it),
 * with the controls tests need: which documents are there, the `issuer` they name, the lists they
 * give, and a token endpoint that moves (the old path then answers 404). Every document request is
 * recorded.
 */
import type { ServerResponse } from 'node:http';
import { json } from './respond.js';

/** Which well-known documents are served; the others answer 404. */
export type IssuerDocuments = 'both' | 'oauth' | 'openid' | 'none';

/** What the documents say, beside the issuer and the token endpoint. */
export interface IssuerLists {
  /** `token_endpoint_auth_methods_supported`; undefined leaves it out. */
  authMethods?: string[] | undefined;
  /** `dpop_signing_alg_values_supported`; undefined leaves it out. */
  dpopAlgs?: string[] | undefined;
}

export interface MockIssuer {
  /** The issuer identifier: the mock's origin and the issuer's path. */
  readonly url: string;
  /** The token endpoint's path now. */
  readonly tokenPath: string;
  /** Every metadata request's path, in order (a test counts the reads). */
  readonly requests: string[];
  /** Serves these documents from now on (default both). */
  serve(documents: IssuerDocuments): void;
  /** The `issuer` the documents name from now on (default {@link MockIssuer.url}: a wrong one tests RFC 8414 §3.3). */
  nameIssuer(issuer: string): void;
  /** The lists the documents give from now on (default: the methods and algorithms the mock accepts). */
  list(lists: IssuerLists): void;
  /** The token endpoint answers at `path` from now on, its old path with 404, and the documents name it there. */
  moveTokenEndpoint(path: string): void;
  /** Answers a metadata request when `path` is a document's; returns whether it did. */
  handle(path: string, res: ServerResponse): boolean;
}

/** The client authentication methods the mock's token endpoint accepts. */
const METHODS = ['client_secret_post', 'client_secret_basic', 'client_secret_jwt', 'private_key_jwt'];
/** The proof algorithms its DPoP verifier accepts. */
const DPOP_ALGS = ['ES256', 'ES384', 'ES512', 'EdDSA', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512'];

/** The issuer at `origin` + `path`, whose token endpoint starts at `tokenPath`. */
export function createMockIssuer(origin: () => string, path: string, tokenPath: string): MockIssuer {
  const issuerPath = path.replace(/\/$/, '');
  const oauthPath = `/.well-known/oauth-authorization-server${issuerPath}`;
  const openidPath = `${issuerPath}/.well-known/openid-configuration`;
  let documents: IssuerDocuments = 'both';
  let named: string | undefined;
  let lists: IssuerLists = { authMethods: METHODS, dpopAlgs: DPOP_ALGS };
  let token = tokenPath;
  const requests: string[] = [];
  const issuer = {
    get url() {
      return `${origin()}${path}`;
    },
    get tokenPath() {
      return token;
    },
    requests,
    serve: (d: IssuerDocuments) => void (documents = d),
    nameIssuer: (value: string) => void (named = value),
    list: (l: IssuerLists) => void (lists = l),
    moveTokenEndpoint: (p: string) => void (token = p),
    handle(requested: string, res: ServerResponse) {
      const oauth = requested === oauthPath;
      if (!oauth && requested !== openidPath) return false;
      requests.push(requested);
      if (documents === 'none' || documents === (oauth ? 'openid' : 'oauth')) {
        json(res, 404, { error: 'not_found' });
        return true;
      }
      json(res, 200, {
        issuer: named ?? issuer.url,
        token_endpoint: `${origin()}${token}`,
        grant_types_supported: ['client_credentials'],
        ...(lists.authMethods === undefined ? {} : { token_endpoint_auth_methods_supported: lists.authMethods }),
        ...(lists.dpopAlgs === undefined ? {} : { dpop_signing_alg_values_supported: lists.dpopAlgs }),
      });
      return true;
    },
  };
  return issuer;
}
