/**
 * The mock's DPoP proof check (RFC 9449 §4.3, §7.1, §8, §9), as strict as a real authorization or
 * resource server: exactly one `DPoP` header; `typ` `dpop+jwt`; an asymmetric `alg`; a public
 * `jwk` without private members; the signature; `htm`; `htu` after RFC 3986 §6.2.2-6.2.3
 * normalisation; `iat` within a minute; each `jti` once; a nonce when one is demanded; `ath`
 * against the presented token; the token's `cnf.jkt` against the proof key's thumbprint.
 */
import { createHash, randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, compactVerify, importJWK, type JWK } from 'jose';

/** `invalid_dpop_proof` and `use_dpop_nonce` (RFC 9449 §5, §7.1, §8), or `invalid_token` for a token bound to another key. */
export type DpopErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce' | 'invalid_token';

/** A proof that passed (with its key's thumbprint, to bind a token to), or why it did not. */
export type DpopVerdict =
  | { ok: true; jkt: string }
  | {
      ok: false;
      error: DpopErrorCode;
      description: string;
      /** With `use_dpop_nonce`: the nonce to send in `DPoP-Nonce`. */ nonce?: string;
    };

export interface DpopRequest {
  /** The request's headers as received, name and value alternating (Node's `rawHeaders`). */
  rawHeaders: readonly string[];
  method: string;
  /** The absolute URL the request reached this server at. */
  url: string;
  /** The access token presented with `Authorization: DPoP` (resource server); the proof must carry its `ath`. */
  accessToken?: string | undefined;
  /** The `cnf.jkt` of that token: the proof's key must have this thumbprint. */
  boundJkt?: string | undefined;
}

export interface DpopVerifierOptions {
  /** Milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
  /** How far `iat` may be from now, either way, in seconds; default 60. */
  maxSkewS?: number;
  /** Demand the server's current nonce in every proof (RFC 9449 §8, §9). */
  requireNonce?: boolean;
}

export interface DpopVerifier {
  verify(request: DpopRequest): Promise<DpopVerdict>;
  /** Whether proofs must carry the current nonce; may change at any time. */
  requireNonce: boolean;
  /** The nonce proofs must carry now (also what to send in `DPoP-Nonce` on any answer). */
  nonce(): string;
  /** Issues a new nonce; the old one is refused from then on. */
  rotateNonce(): string;
}

/** Asymmetric JWS algorithms a proof may use (RFC 9449 §4.3: not `none`, no MAC). */
const ALGS = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']);
/** JWK members of a private or symmetric key (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const UNRESERVED = /[A-Za-z0-9\-._~]/;

const fail = (description: string, error: DpopErrorCode = 'invalid_dpop_proof'): DpopVerdict => ({ ok: false, error, description });

/**
 * RFC 3986 §6.2.2-6.2.3, as a server compares `htu` with the URL it built from the request line:
 * scheme and host lower-case, the default port dropped (the origin read by a WHATWG URL), an empty
 * path read as `/`, `%xx` upper-case and unreserved ones decoded; no query or fragment. The path is
 * otherwise kept as it is written: a URL parser would percent-encode some raw characters (`^`,
 * `{`, `"`), each Node version its own set, and so take a proof for the wrong path as the right one.
 */
export function normalizeHtu(value: string): string | undefined {
  const parts = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*)([^?#]*)/.exec(value);
  if (parts === null) return undefined;
  let origin: URL;
  try {
    origin = new URL(parts[1]!);
  } catch {
    return undefined;
  }
  const path = (parts[2] || '/').replace(/%([0-9a-fA-F]{2})/g, (_m, hex: string) => {
    const ch = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
  return `${origin.protocol}//${origin.host}${path}`;
}

function dpopHeaders(rawHeaders: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === 'dpop') values.push(rawHeaders[i + 1]!);
  return values;
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The header's problem, or undefined when `typ`, `alg` and `jwk` are as RFC 9449 §4.2 wants. */
function headerProblem(header: Record<string, unknown>): string | undefined {
  if (header.typ !== 'dpop+jwt') return `typ must be dpop+jwt (got ${JSON.stringify(header.typ)})`;
  if (typeof header.alg !== 'string' || !ALGS.has(header.alg))
    return `alg must be an asymmetric algorithm (got ${JSON.stringify(header.alg)})`;
  const jwk = header.jwk;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return 'jwk must be the public key as a JWK';
  const members = PRIVATE_MEMBERS.filter((m) => m in jwk);
  if (members.length > 0) return `jwk must not hold private key members (got ${members.join(', ')})`;
  return undefined;
}

/**
 * Creates the checker, with its memory of seen `jti` values (kept as long as their proof could
 * still pass the `iat` check) and its nonce.
 */
export function createDpopVerifier(options: DpopVerifierOptions = {}): DpopVerifier {
  const now = options.now ?? Date.now;
  const skewMs = (options.maxSkewS ?? 60) * 1000;
  const seen = new Map<string, number>();
  let currentNonce = randomBytes(16).toString('base64url');

  // Entries go in with a deadline a fixed time after their check, so the oldest come first: the
  // sweep stops at the first one still kept, whatever the number of proofs remembered.
  const forget = (t: number): void => {
    for (const [jti, until] of seen) {
      if (until >= t) break;
      seen.delete(jti);
    }
  };

  const verifier: DpopVerifier = {
    requireNonce: options.requireNonce ?? false,
    nonce: () => currentNonce,
    rotateNonce: () => (currentNonce = randomBytes(16).toString('base64url')),
    async verify(request) {
      const values = dpopHeaders(request.rawHeaders);
      if (values.length !== 1)
        return fail(values.length === 0 ? 'no DPoP header' : `${values.length} DPoP headers; exactly one is allowed`);
      const proof = values[0]!;
      const parts = proof.split('.');
      if (parts.length !== 3) return fail('the DPoP header is not a compact JWS');
      const header = decodeJson(parts[0]!);
      const payload = decodeJson(parts[1]!);
      if (header === undefined || payload === undefined) return fail("the proof's header or claims are not JSON objects");
      const problem = headerProblem(header);
      if (problem !== undefined) return fail(problem);
      const jwk = header.jwk as JWK;
      const alg = header.alg as string;
      try {
        await compactVerify(proof, await importJWK(jwk, alg), { algorithms: [alg] });
      } catch {
        return fail("the proof's signature does not verify with its jwk");
      }
      const { jti, htm, htu, iat, ath, nonce } = payload;
      if (typeof jti !== 'string' || jti === '') return fail('jti is missing');
      if (htm !== request.method) return fail(`htm ${JSON.stringify(htm)} is not the request's method ${request.method}`);
      // RFC 9449 §4.2: the client sends htu without query and fragment; refusing them checks it does.
      if (typeof htu === 'string' && /[?#]/.test(htu)) return fail(`htu must be without query and fragment (got ${JSON.stringify(htu)})`);
      const expected = normalizeHtu(request.url);
      if (typeof htu !== 'string' || expected === undefined || normalizeHtu(htu) !== expected) {
        return fail(`htu ${JSON.stringify(htu)} is not the request's URL ${expected ?? request.url}`);
      }
      const t = now();
      if (typeof iat !== 'number' || !Number.isFinite(iat) || Math.abs(iat * 1000 - t) > skewMs)
        return fail('iat is missing or not within a minute of now');
      if (verifier.requireNonce && nonce !== currentNonce) {
        return {
          ok: false,
          error: 'use_dpop_nonce',
          description: nonce === undefined ? 'a nonce is required' : 'the nonce is not the current one',
          nonce: currentNonce,
        };
      }
      forget(t);
      if (seen.has(jti)) return fail('jti was used before');
      seen.set(jti, t + 2 * skewMs);
      if (request.accessToken !== undefined) {
        const want = createHash('sha256').update(request.accessToken, 'ascii').digest('base64url');
        if (ath !== want) return fail(ath === undefined ? 'ath is missing' : 'ath is not the hash of the presented token');
      }
      const jkt = await calculateJwkThumbprint(jwk, 'sha256');
      if (request.boundJkt !== undefined && request.boundJkt !== jkt)
        return fail('the token is bound to another key (cnf.jkt)', 'invalid_token');
      return { ok: true, jkt };
    },
  };
  return verifier;
}

/** The `WWW-Authenticate` value a resource server answers a refused proof with (RFC 9449 §7.1). */
export function dpopChallenge(verdict: Extract<DpopVerdict, { ok: false }>): string {
  const description = verdict.description.replace(/["\\]/g, '');
  return `DPoP error="${verdict.error}", error_description="${description}", algs="${[...ALGS].join(' ')}"`;
}
