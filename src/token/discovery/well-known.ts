/**
 * Where an issuer publishes its metadata, and whether a document's `issuer` is the one asked for:
 * RFC 8414 §3.1 and §3.3, and OpenID Connect Discovery 1.0 §4.
 */

/** The two documents an issuer's metadata may be read from, in the order they are tried. */
export interface MetadataUrls {
  /** RFC 8414 §3.1: the well-known prefix, then the issuer's path. */
  readonly oauth: string;
  /** OpenID Connect Discovery 1.0 §4.1: the issuer, then the well-known suffix. */
  readonly openid: string;
}

/**
 * The metadata URLs of `issuer` (an absolute URL without query or fragment). RFC 8414 §3.1
 * inserts `/.well-known/oauth-authorization-server` between the host and the issuer's path
 * (`https://host/tenant` → `https://host/.well-known/oauth-authorization-server/tenant`);
 * OpenID Connect Discovery appends `/.well-known/openid-configuration` to the issuer, path kept.
 * Both remove a terminating `/` of the issuer first, so `https://host/` and `https://host` read
 * the same documents.
 */
export function metadataUrls(issuer: string): MetadataUrls {
  const url = new URL(issuer);
  const path = url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
  return {
    oauth: `${url.origin}/.well-known/oauth-authorization-server${path}`,
    openid: `${url.origin}${path}/.well-known/openid-configuration`,
  };
}

/**
 * Why the `issuer` a document names is not `configured`, or undefined when it is the same string
 * (RFC 8414 §3.3 and OpenID Connect Discovery 1.0 §4.3: identical, or the metadata must not be
 * used). Two values that differ only by a trailing slash are refused as well, since an issuer is
 * compared as a string (Auth0's end in one), with both values shown so the operator sees why.
 */
export function issuerMismatch(found: unknown, configured: string): string | undefined {
  if (found === configured) return undefined;
  if (typeof found !== 'string' || found === '') return 'it names no issuer';
  const shown = `it names the issuer ${JSON.stringify(found)}, not ISSUER_URL ${JSON.stringify(configured)}`;
  const bare = (s: string): string => (s.endsWith('/') ? s.slice(0, -1) : s);
  if (bare(found) === bare(configured)) {
    return `${shown}: they differ by the trailing slash only, and an issuer must be identical (RFC 8414 §3.3)`;
  }
  return `${shown}, and an issuer must be identical (RFC 8414 §3.3)`;
}
