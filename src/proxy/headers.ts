/**
 * Header rules in both directions (PRODUCT §4.5-4.6). Headers travel as Node's flat raw lists
 * (`[name, value, name, value, ...]`) so names keep their case and repeated fields their order.
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1): never forwarded in either direction. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

/** Plus the caller's credentials and what the proxy sets or handles itself (`Expect`: §4.7). */
const DROP_REQUEST = new Set([...HOP_BY_HOP, 'proxy-authorization', 'authorization', 'host', 'expect', 'http2-settings']);

const DROP_RESPONSE = new Set([...HOP_BY_HOP, 'proxy-authenticate']);

/** Names listed in `Connection` values (RFC 9110 §7.6.1): hop-by-hop for this message. */
function connectionNamed(raw: readonly string[]): Set<string> | undefined {
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection') {
      for (const token of raw[i + 1]!.split(',')) {
        const t = token.trim().toLowerCase();
        if (t !== '') (named ??= new Set()).add(t);
      }
    }
  }
  return named;
}

/**
 * The headers to send upstream: the caller's, less hop-by-hop ones and its credentials, plus the
 * proxy's `Authorization`. `Host` is left to the client, which sets the gateway's.
 */
export function upstreamRequestHeaders(raw: readonly string[], authorization: string): string[] {
  const named = connectionNamed(raw);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (DROP_REQUEST.has(lower) || (named !== undefined && named.has(lower))) continue;
    out.push(name, raw[i + 1]!);
  }
  out.push('authorization', authorization);
  return out;
}

/**
 * The headers to send back: the gateway's, less hop-by-hop ones, with a `Location` that points
 * into the gateway rewritten to the origin the caller used (PRODUCT §4.6).
 */
export function callerResponseHeaders(
  raw: readonly (Buffer | string)[],
  baseUrl: string,
  callerOrigin: string,
): string[] {
  const strings: string[] = new Array<string>(raw.length);
  for (let i = 0; i < raw.length; i++) strings[i] = typeof raw[i] === 'string' ? (raw[i] as string) : (raw[i] as Buffer).toString('latin1');
  const named = connectionNamed(strings);
  const out: string[] = [];
  for (let i = 0; i < strings.length; i += 2) {
    const name = strings[i]!;
    const lower = name.toLowerCase();
    if (DROP_RESPONSE.has(lower) || (named !== undefined && named.has(lower))) continue;
    let value = strings[i + 1]!;
    if (lower === 'location') value = rewriteLocation(value, baseUrl, callerOrigin);
    out.push(name, value);
  }
  return out;
}

/**
 * `{baseUrl}/x` becomes `{callerOrigin}/x`, and an absolute path `{base path}/x` becomes `/x`
 * (RFC 9110 §10.2.2 allows a relative Location; the caller resolves it against the proxy);
 * any other location is left alone.
 */
export function rewriteLocation(location: string, baseUrl: string, callerOrigin: string): string {
  if (location.charCodeAt(0) === 47 /* / */ && location.charCodeAt(1) !== 47) {
    const slash = baseUrl.indexOf('/', baseUrl.indexOf('//') + 2);
    if (slash === -1) return location;
    const basePath = baseUrl.slice(slash);
    const rest = location.startsWith(basePath) ? location.slice(basePath.length) : undefined;
    if (rest === undefined || (rest !== '' && rest[0] !== '/' && rest[0] !== '?' && rest[0] !== '#')) return location;
    return rest[0] === '/' ? rest : `/${rest}`;
  }
  if (location.length < baseUrl.length || location.slice(0, baseUrl.length).toLowerCase() !== baseUrl.toLowerCase()) {
    return location;
  }
  const rest = location.slice(baseUrl.length);
  if (rest !== '' && rest[0] !== '/' && rest[0] !== '?' && rest[0] !== '#') return location;
  return callerOrigin + (rest === '' ? '/' : rest);
}
