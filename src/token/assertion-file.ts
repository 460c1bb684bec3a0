/**
 * `client_assertion_file`: a JWT that another party writes and rotates (a Kubernetes projected
 * service account token, a SPIFFE JWT-SVID), read afresh for every token request.
 */
import type { ClientAuth } from './client-auth.js';
import { ClientAssertionError } from './errors.js';

/** Options of {@link clientAssertionFile}. */
export interface ClientAssertionFileOptions {
  path: string;
  /** Reads the file afresh; injected so tests need no files. */
  read: (path: string) => string;
  assertionType: string;
  /** Milliseconds since the epoch. */
  now: () => number;
}

/** What `check` may show of an assertion: never the assertion itself. */
export interface AssertionSummary {
  issuer: string | undefined;
  subject: string | undefined;
  audience: string | undefined;
  /** Seconds since the epoch, when the assertion says. */
  expiresAt: number | undefined;
}

/** Reads the claims of a compact JWT without verifying it; throws when it is not one. */
export function summarizeAssertion(jwt: string): AssertionSummary {
  if (!/^[\w-]+\.[\w-]+\.[\w-]*$/.test(jwt)) throw new Error('not a compact JWT');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
  } catch {
    throw new Error('not a compact JWT (its payload is not JSON)');
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims))
    throw new Error('not a compact JWT (its payload is not a JSON object)');
  const { iss, sub, aud, exp } = claims as Record<string, unknown>;
  const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const audience = Array.isArray(aud) ? aud.filter((a) => typeof a === 'string').join(', ') : text(aud);
  return { issuer: text(iss), subject: text(sub), audience, expiresAt: typeof exp === 'number' ? exp : undefined };
}

/**
 * `client_assertion_file`: a JWT another party writes and rotates (a projected service
 * account token, a JWT-SVID) is read afresh for every request. An expired one is not sent: the
 * error names the file and the moment it expired.
 */
export function clientAssertionFile(options: ClientAssertionFileOptions): ClientAuth {
  return (credential) => {
    let assertion: string;
    let summary: AssertionSummary;
    try {
      assertion = options.read(options.path).trim();
      summary = summarizeAssertion(assertion);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new ClientAssertionError('network_error', `client assertion file ${options.path} cannot be used (${reason})`, { cause: err });
    }
    if (summary.expiresAt !== undefined && summary.expiresAt * 1000 <= options.now()) {
      const at = new Date(summary.expiresAt * 1000).toISOString();
      throw new ClientAssertionError(
        'network_error',
        `client assertion in ${options.path} expired at ${at}: the projected token is not being rotated`,
      );
    }
    return {
      headers: {},
      form: [
        ['client_id', credential.clientId],
        ['client_assertion_type', options.assertionType],
        ['client_assertion', assertion],
      ],
      credentials:
        `CLIENT_ID and the assertion in ${options.path} ` + '(its issuer, subject and audience, as the identity provider expects them)',
    };
  };
}
