import { InvalidClientError } from '../core/errors.js';
import type { Credential } from './client-auth/index.js';

const BASIC = /^basic[ \t]+([^ \t]*)[ \t]*$/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The caller's credentials from `Authorization: Basic base64(id:secret)` (RFC 7617): undefined
 * when the header is absent or another scheme, `invalid_client` when it is malformed (bad base64,
 * no colon, empty id). The error never quotes the header.
 */
export function parseBasicCredentials(authorization: string | undefined): Credential | InvalidClientError | undefined {
  if (authorization === undefined) return undefined;
  const m = BASIC.exec(authorization);
  if (m === null) return /^basic(?:[ \t]|$)/i.test(authorization) ? malformed('no credentials after the scheme') : undefined;
  const encoded = m[1]!;
  if (encoded === '' || !BASE64.test(encoded) || encoded.length % 4 === 1) return malformed('the credentials are not base64');
  let decoded: string;
  try {
    decoded = utf8.decode(Buffer.from(encoded, 'base64'));
  } catch {
    return malformed('the credentials are not UTF-8');
  }
  const colon = decoded.indexOf(':');
  if (colon === -1) return malformed('the credentials have no colon between id and secret');
  if (colon === 0) return malformed('the client id is empty');
  return { clientId: decoded.slice(0, colon), clientSecret: decoded.slice(colon + 1) };
}

function malformed(reason: string): InvalidClientError {
  return new InvalidClientError(`malformed Basic credentials: ${reason}`);
}
