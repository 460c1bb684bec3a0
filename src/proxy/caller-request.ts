import type { IncomingMessage, ServerResponse } from 'node:http';
import { connectionNamed, HOP_BY_HOP, withoutNamed } from './hop-by-hop.js';

/**
 * A caller's request as the forwarder reads it, once (docs/forwarding.md, "Headers"): Node's
 * request and response, when it began, and what its headers said, read in one pass over the raw
 * list without building Node's `req.headers` object.
 */

/** Plus the caller's credentials and what the proxy sets or handles itself (`Expect`: the proxy sends `100 Continue` itself). */
const DROP_REQUEST = new Set([...HOP_BY_HOP, 'proxy-authorization', 'authorization', 'dpop', 'host', 'expect', 'http2-settings']);

/** A caller's request, read once by the forwarder (forward.ts) and handed to its exchange. */
export interface CallerRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** `performance.now()` when the request reached the forwarder. */
  readonly started: number;
  /** Arrived through the listener's `checkContinue` event: `100 Continue` is the proxy's to send. */
  readonly expectContinue: boolean;
  /** The target as its route's gateway gets it after its path prefix: the request's, less the route's mount. */
  target: string;
  /** The mount it came through (`/eu`), or `''`: put back in front of a rewritten `Location`. */
  mount: string;
  /**
   * The caller's headers to send upstream, as a flat raw list: less hop-by-hop headers and the
   * caller's credentials (`Host` is left to the client, which sets the gateway's), and last the
   * proxy's own `Authorization`, its value set at each send (exchange.ts).
   */
  readonly forward: string[];
  /** `Content-Length` as sent, when sent. */
  readonly contentLength: string | undefined;
  /** A `Transfer-Encoding` was sent: the request has a body of unknown length. */
  readonly transferEncoding: boolean;
  /** A body follows the head (RFC 9112 §6.3): a `Content-Length` other than 0, or a `Transfer-Encoding`. */
  readonly hasBody: boolean;
  /** `Host` as sent, when sent (for rewriting a `Location`). */
  readonly host: string | undefined;
  /** The caller's own `Authorization` (the first), never forwarded: pass-through credentials. */
  readonly authorization: string | undefined;
  /**
   * The protocols of an upgrade request (`Upgrade` with `Connection: upgrade`) other than an
   * `h2c` offer, which is ignored as RFC 9110 §7.8 allows; undefined when there are none.
   */
  readonly upgrade: string | undefined;
}

/** The request with its headers read (see {@link CallerRequest}). */
export function readCallerRequest(req: IncomingMessage, res: ServerResponse, started: number, expectContinue: boolean): CallerRequest {
  const raw = req.rawHeaders;
  const forward: string[] = [];
  let contentLength: string | undefined;
  let transferEncoding = false;
  let host: string | undefined;
  let authorization: string | undefined;
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
    else if (lower === 'authorization') authorization ??= value;
    else if (lower === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
    else if (lower === 'upgrade') upgrade = upgrade === undefined ? value : `${upgrade},${value}`;
  }
  // The usual values name no other field: read without a call.
  const named = connection === undefined || connection === 'keep-alive' || connection === 'close' ? undefined : connectionNamed(connection);
  if (upgrade !== undefined && (named === undefined || !named.has('upgrade') || isH2cOffer(upgrade))) upgrade = undefined;
  const upstream = named === undefined ? forward : withoutNamed(forward, named);
  upstream.push('authorization', '');
  return {
    req,
    res,
    started,
    expectContinue,
    target: req.url!,
    mount: '',
    forward: upstream,
    contentLength,
    transferEncoding,
    hasBody: (contentLength !== undefined && contentLength !== '0') || transferEncoding,
    host,
    authorization,
    upgrade,
  };
}

/** `Upgrade: h2c` (every protocol offered is h2c): HTTP/2 over cleartext, which the proxy ignores. */
function isH2cOffer(value: string): boolean {
  for (const token of value.split(',')) {
    const t = token.trim().toLowerCase();
    if (t !== '' && t !== 'h2c') return false;
  }
  return true;
}
