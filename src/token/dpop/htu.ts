/**
 * The `htu` claim (RFC 9449 §4.2): the URI the request goes to, without query and fragment. The
 * server builds its own from the request line it receives and compares the two after syntax- and
 * scheme-based normalisation (RFC 9449 §4.3, RFC 3986 §6.2.2-6.2.3), so the path in `htu` is the
 * path exactly as the request line carries it: never re-encoded by a URL parser, whose encode set
 * differs between Node versions (Node 22 leaves `^` raw, Node 24 writes `%5E`) and between servers.
 */

/**
 * The `htu` of every request forwarded to the gateway at `baseUrl` (`BASE_URL` as the
 * configuration keeps it): returns a function taking the request target as received
 * (`/api/v1/tickets?state=open`) and giving the gateway's origin (scheme and host lower-case, the
 * default port dropped) and path prefix followed by the target's path, without query. The request
 * line carries that prefix and the target as they are (`proxy/exchange.ts`); the path guard has
 * let only origin-form targets without `#` through, and Node's HTTP parser only printable ASCII.
 * The prefix is worked out once; per request it is one slice and one concatenation.
 */
export function gatewayHtu(baseUrl: string): (target: string) => string {
  const url = new URL(baseUrl);
  const prefix = `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
  return (target) => {
    const q = target.indexOf('?');
    return prefix + (q === -1 ? target : target.slice(0, q));
  };
}

/**
 * The `htu` of a request to an absolute URL (the token endpoint): its WHATWG reading without query
 * and fragment, which is also the path undici writes on the request line for that URL.
 */
export function htuOf(target: string): string {
  const url = new URL(target);
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** A gateway as a DPoP proof names it: its origin, whose nonces are kept apart, and each target's `htu`. */
export interface DpopGateway {
  /** Scheme, host and port: the gateway's `DPoP-Nonce`s are kept per origin. */
  readonly origin: string;
  /** The `htu` of a request target (path and query as received): see {@link gatewayHtu}. */
  readonly htu: (target: string) => string;
}

/** The gateway at `baseUrl` (`BASE_URL` as the configuration keeps it), as DPoP proofs name it. */
export function dpopGateway(baseUrl: string): DpopGateway {
  return { origin: new URL(baseUrl).origin, htu: gatewayHtu(baseUrl) };
}
