/**
 * Server-provided nonces (RFC 9449 §8, §9): each server's latest `DPoP-Nonce`, sent in the next
 * proofs to it. The token endpoint's and the gateway's nonces are kept apart even when both share
 * an origin: a nonce is issued by one server role for its own proofs.
 */

/** Which server a nonce came from: the token endpoint (authorization server) or the gateway (resource server). */
export type NonceRole = 'token' | 'gateway';

/** RFC 9449 §8.1: `nonce = 1*NQCHAR`, printable ASCII without space, `"` and `\`. */
const NONCE = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** A nonce longer than this is not kept: no server needs more, and it would ride on every request. */
const MAX_NONCE_LENGTH = 1024;

/** Servers remembered at most: the token endpoint and the gateway, with room for a few more. */
const MAX_SERVERS = 64;

export interface DpopNonces {
  /** The latest nonce of the server at `origin` in `role`, or undefined when it has sent none. */
  get(role: NonceRole, origin: string): string | undefined;
  /**
   * Keeps the `DPoP-Nonce` header value of any answer (a 200 too) as the server's latest nonce,
   * replacing the one before. An absent header changes nothing; a value that is no valid nonce
   * (or several values) is ignored. Returns true when the nonce kept is new.
   */
  remember(role: NonceRole, origin: string, header: string | readonly string[] | undefined): boolean;
}

/** Creates the nonce memory, one per process (shared by every credential's token requests). */
export function createDpopNonces(): DpopNonces {
  const nonces = new Map<string, string>();
  return {
    get: (role, origin) => nonces.get(`${role} ${origin}`),
    remember(role, origin, header) {
      if (header === undefined) return false;
      const value = typeof header === 'string' ? header : header.length === 1 ? header[0]! : undefined;
      if (value === undefined || value.length > MAX_NONCE_LENGTH || !NONCE.test(value)) return false;
      const key = `${role} ${origin}`;
      if (nonces.get(key) === value) return false;
      if (!nonces.has(key) && nonces.size >= MAX_SERVERS) nonces.delete(nonces.keys().next().value!);
      nonces.set(key, value);
      return true;
    },
  };
}

/**
 * Whether a gateway's `WWW-Authenticate` asks for a nonce: a `DPoP` challenge with
 * `error="use_dpop_nonce"` (RFC 9449 §9). Several challenges may share the header.
 */
export function asksForNonce(wwwAuthenticate: string | readonly string[] | undefined): boolean {
  if (wwwAuthenticate === undefined) return false;
  const text = typeof wwwAuthenticate === 'string' ? wwwAuthenticate : wwwAuthenticate.join(', ');
  // RFC 9110 §11.6.1: a challenge is a scheme followed by its parameters; a bare token starts the next.
  let scheme = '';
  for (const m of text.matchAll(/([!#$%&'*+.^_`|~\w-]+)(?:\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*))?/g)) {
    const value = m[2];
    if (value === undefined) scheme = m[1]!.toLowerCase();
    else if (scheme === 'dpop' && m[1]!.toLowerCase() === 'error' && value.replace(/^"|"$/g, '') === 'use_dpop_nonce') return true;
  }
  return false;
}
