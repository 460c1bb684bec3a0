import type { IncomingMessage } from 'node:http';
import { CredentialsRequiredError, ProxyError } from '../core/errors.js';
import { parseBasicCredentials } from '../token/basic-credentials.js';
import type { SourceCache } from '../token/source-cache.js';
import type { TokenSource } from '../token/token-source.js';

/** Which token source serves a request, or the error to answer it with. */
export type SelectSource = (req: IncomingMessage) => TokenSource | ProxyError;

/**
 * Chooses the token source of each request:
 * - with pass-through on (`PASSTHROUGH_BASIC`), a request carrying Basic credentials is served by
 *   their own source from the cache; malformed ones, or ones the token endpoint rejected, are
 *   answered `invalid_client`;
 * - any other request is served by the configured credential, or answered
 *   `credentials_required` when none is configured.
 *
 * Built once; the function it returns allocates nothing for a request served by the configured
 * credential.
 */
export function createSourceSelector(configured: TokenSource | undefined, passthrough: SourceCache | undefined): SelectSource {
  const fallback: TokenSource | ProxyError =
    configured ?? new CredentialsRequiredError('no credentials are configured; send Basic credentials');
  if (passthrough === undefined) return () => fallback;
  return (req) => {
    const basic = parseBasicCredentials(req.headers.authorization);
    if (basic instanceof ProxyError) return basic;
    if (basic !== undefined) return passthrough.sourceFor(basic);
    return fallback;
  };
}
