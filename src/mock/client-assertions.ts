/**
 * Client assertions at the mock's token endpoint: `private_key_jwt` clients with a registered
 * public key (RFC 7523 §3, OpenID Connect Core §9) and federated clients whose assertion is a JWT
 * from a trusted issuer (a Kubernetes service account token, a JWT-SVID), checked against that
 * issuer's JWKS, and `client_secret_jwt` clients (RFC 7523 §2.2) whose HS256 assertion is signed
 * with their secret. Federated clients have no secret, so none is ever accepted for them.
 */
import type { KeyObject } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';

/** A client that authenticates with an assertion from a trusted issuer. */
export interface FederatedClient {
  issuer: string;
  subject: string;
  audience: string;
  jwks: JSONWebKeySet;
}

export interface AssertionVerdict {
  ok: boolean;
  clientId: string | undefined;
  method: 'private_key_jwt' | 'federated' | 'client_secret_jwt';
  description?: string;
}

/** The mock's registry of assertion clients and the jti values already used. */
export interface AssertionClients {
  setPublicKey(clientId: string, key: KeyObject): void;
  setFederated(clientId: string, client: FederatedClient): void;
  isFederated(clientId: string | undefined): boolean;
  handles(clientId: string | undefined): boolean;
  /** Verifies the form's client_assertion; `tokenUrl` is the audience a private_key_jwt must name. */
  verify(form: URLSearchParams, tokenUrl: string): Promise<AssertionVerdict>;
  /**
   * Verifies a `client_secret_jwt` assertion (HS256) with the client's secret: signature,
   * iss = sub = client id, aud = `tokenUrl`, exp, and a jti used once.
   */
  verifyWithSecret(form: URLSearchParams, tokenUrl: string, secretOf: (clientId: string) => string | undefined): Promise<AssertionVerdict>;
}

/** Whether a compact JWT's header names an HMAC algorithm (a `client_secret_jwt` assertion). */
export function isSecretJwt(assertion: string): boolean {
  try {
    const header = JSON.parse(Buffer.from(assertion.split('.')[0]!, 'base64url').toString('utf8')) as { alg?: unknown };
    return typeof header.alg === 'string' && /^HS\d+$/.test(header.alg);
  } catch {
    return false;
  }
}

/** The issuer an unverified assertion names (only to look its secret up). */
function claimedIssuer(assertion: string): string | undefined {
  try {
    const claims = JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString('utf8')) as { iss?: unknown };
    return typeof claims.iss === 'string' ? claims.iss : undefined;
  } catch {
    return undefined;
  }
}

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const JWT_SPIFFE = 'urn:ietf:params:oauth:client-assertion-type:jwt-spiffe';

/** Creates an empty registry. */
export function createAssertionClients(): AssertionClients {
  const keys = new Map<string, KeyObject>();
  const federated = new Map<string, FederatedClient>();
  const usedJti = new Set<string>();

  const refuse = (clientId: string | undefined, method: AssertionVerdict['method'], description: string): AssertionVerdict => ({
    ok: false,
    clientId,
    method,
    description,
  });

  return {
    setPublicKey: (id, key) => void keys.set(id, key),
    setFederated: (id, client) => void federated.set(id, client),
    isFederated: (id) => id !== undefined && federated.has(id),
    handles: (id) => id !== undefined && (federated.has(id) || keys.has(id)),
    async verify(form, tokenUrl) {
      const clientId = form.get('client_id') ?? undefined;
      const assertion = form.get('client_assertion') ?? '';
      const type = form.get('client_assertion_type');
      const fed = clientId === undefined ? undefined : federated.get(clientId);
      if (fed) {
        if (type !== JWT_BEARER && type !== JWT_SPIFFE) return refuse(clientId, 'federated', 'unsupported client_assertion_type');
        try {
          await jwtVerify(assertion, createLocalJWKSet(fed.jwks), { issuer: fed.issuer, subject: fed.subject, audience: fed.audience });
          return { ok: true, clientId, method: 'federated' };
        } catch (err) {
          return refuse(clientId, 'federated', `assertion refused (${(err as { code?: string }).code ?? 'invalid'})`);
        }
      }
      const key = clientId === undefined ? undefined : keys.get(clientId);
      if (!key || type !== JWT_BEARER) return refuse(clientId, 'private_key_jwt', 'unknown client or assertion type');
      try {
        const { payload } = await jwtVerify(assertion, key, {
          issuer: clientId,
          subject: clientId,
          audience: tokenUrl,
          requiredClaims: ['exp', 'jti'],
        });
        // RFC 7523 §3 item 7: a jti is accepted once.
        if (usedJti.has(payload.jti!)) return refuse(clientId, 'private_key_jwt', 'jti already used');
        usedJti.add(payload.jti!);
        return { ok: true, clientId, method: 'private_key_jwt' };
      } catch (err) {
        return refuse(clientId, 'private_key_jwt', `assertion refused (${(err as { code?: string }).code ?? 'invalid'})`);
      }
    },
    async verifyWithSecret(form, tokenUrl, secretOf) {
      const assertion = form.get('client_assertion') ?? '';
      // RFC 7523 §3: client_id is optional beside an assertion; the issuer names the client then.
      const clientId = form.get('client_id') ?? claimedIssuer(assertion);
      const secret = clientId === undefined ? undefined : secretOf(clientId);
      if (secret === undefined || form.get('client_assertion_type') !== JWT_BEARER) {
        return refuse(clientId, 'client_secret_jwt', 'unknown client or assertion type');
      }
      try {
        const { payload } = await jwtVerify(assertion, Buffer.from(secret, 'utf8'), {
          algorithms: ['HS256'],
          issuer: clientId,
          subject: clientId,
          audience: tokenUrl,
          requiredClaims: ['exp', 'jti'],
        });
        if (usedJti.has(payload.jti!)) return refuse(clientId, 'client_secret_jwt', 'jti already used');
        usedJti.add(payload.jti!);
        return { ok: true, clientId, method: 'client_secret_jwt' };
      } catch (err) {
        return refuse(clientId, 'client_secret_jwt', `assertion refused (${(err as { code?: string }).code ?? 'invalid'})`);
      }
    },
  };
}
