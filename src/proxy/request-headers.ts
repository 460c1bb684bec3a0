import { connectionNamed, HOP_BY_HOP, withoutNamed } from './hop-by-hop.js';

/**
 * The caller's request headers on their way to the gateway (docs/forwarding.md, "Headers"): what
 * goes upstream, and the facts the forwarder needs, read in one pass.
 */

/** Plus the caller's credentials and what the proxy sets or handles itself (`Expect`: the proxy sends `100 Continue` itself). */
const DROP_REQUEST = new Set([...HOP_BY_HOP, 'proxy-authorization', 'authorization', 'dpop', 'host', 'expect', 'http2-settings']);

/**
 * What the forwarder needs to know of a request, read once from the caller's raw headers: what
 * goes upstream (less hop-by-hop headers and the caller's credentials; `Host` is left to the
 * client, which sets the gateway's) and the facts the forwarder needs, without building Node's
 * `req.headers` object.
 */
export class RequestHeaders {
  /** The caller's headers to send upstream, as a flat raw list; the proxy's `Authorization` goes last. */
  readonly forward: string[];
  /** `Content-Length` as sent, when sent. */
  readonly contentLength: string | undefined;
  /** A `Transfer-Encoding` was sent: the request has a body of unknown length. */
  readonly transferEncoding: boolean;
  /** A body follows the head (RFC 9112 §6.3): a `Content-Length` other than 0, or a `Transfer-Encoding`. */
  readonly hasBody: boolean;
  /** `Host` as sent, when sent (for rewriting a `Location`). */
  readonly host: string | undefined;
  /**
   * The protocols of an upgrade request (`Upgrade` with `Connection: upgrade`) other than an
   * `h2c` offer, which is ignored as RFC 9110 §7.8 allows; undefined when there are none.
   */
  readonly upgrade: string | undefined;

  constructor(raw: readonly string[]) {
    const forward: string[] = [];
    let contentLength: string | undefined;
    let transferEncoding = false;
    let host: string | undefined;
    let connection: string | undefined;
    let upgrade: string | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      const value = raw[i + 1]!;
      const lower = name.toLowerCase();
      if (!DROP_REQUEST.has(lower)) {
        if (lower === 'content-length') contentLength = value;
        forward.push(name, value);
      } else if (lower === 'transfer-encoding') transferEncoding = true;
      else if (lower === 'host') host ??= value;
      else if (lower === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
      else if (lower === 'upgrade') upgrade = upgrade === undefined ? value : `${upgrade},${value}`;
    }
    const named = connection === undefined ? undefined : connectionNamed(connection);
    if (upgrade !== undefined && (named === undefined || !named.has('upgrade') || isH2cOffer(upgrade))) upgrade = undefined;
    this.forward = named === undefined ? forward : withoutNamed(forward, named);
    this.contentLength = contentLength;
    this.transferEncoding = transferEncoding;
    this.hasBody = (contentLength !== undefined && contentLength !== '0') || transferEncoding;
    this.host = host;
    this.upgrade = upgrade;
  }
}

/** Reads the caller's raw headers once (see {@link RequestHeaders}). */
export function readRequestHeaders(raw: readonly string[]): RequestHeaders {
  return new RequestHeaders(raw);
}

/** `Upgrade: h2c` (every protocol offered is h2c): HTTP/2 over cleartext, which the proxy ignores. */
function isH2cOffer(value: string): boolean {
  for (const token of value.split(',')) {
    const t = token.trim().toLowerCase();
    if (t !== '' && t !== 'h2c') return false;
  }
  return true;
}
