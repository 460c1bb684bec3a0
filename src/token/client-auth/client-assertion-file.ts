/**
 * `client_assertion_file` (RFC 7521 §4.2, RFC 7523 §2.2): a JWT that another party writes and
 * rotates (a Kubernetes projected service account token, a SPIFFE JWT-SVID), read afresh for every
 * token request. No secret: a shared token store needs TOKEN_STORE_KEY_FILE for this method's tokens.
 */
import { ClientAssertionError } from '../errors.js';
import { watchSecretFile } from '../secret-file.js';
import { assertionParts } from './jwt-assertion.js';
import type { AuthMethod, Authenticate } from './method.js';

/** Options of {@link assertionFromFile}. */
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
 * The file's assertion, read afresh for every request. An expired one is not sent: the error
 * names the file and the moment it expired, never the assertion.
 */
export function assertionFromFile(options: ClientAssertionFileOptions): Authenticate {
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
    return assertionParts(credential.clientId, options.assertionType, assertion);
  };
}

/** What `check` says of the assertion file now: its claims and time left, or why it cannot be read. */
function describeAssertion(path: string, text: () => string, nowMs: number): string[] {
  try {
    const s = summarizeAssertion(text().trim());
    const life =
      s.expiresAt === undefined
        ? 'no exp claim'
        : `${Math.round(s.expiresAt - nowMs / 1000)} s left (expires ${new Date(s.expiresAt * 1000).toISOString()})`;
    return [
      `client assertion in ${path}: issuer ${s.issuer ?? '(none)'}, subject ${s.subject ?? '(none)'}, audience ` +
        `${s.audience ?? '(none)'}, ${life}`,
    ];
  } catch (err) {
    return [`client assertion in ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`];
  }
}

const METHOD = 'TOKEN_AUTH_METHOD=client_assertion_file';

export const clientAssertionFile: AuthMethod<'client_assertion_file'> = {
  name: 'client_assertion_file',
  usesSecret: false,
  proofSetting: 'clientAssertionFile',
  // No registered name: an assertion another party signed is accepted under names that differ
  // from one identity provider to the next (the client's own key's, a federation's of their own).
  listedAs: undefined,

  check(ctx, secretSetting) {
    if (ctx.given(secretSetting)) {
      ctx.problem(
        `${ctx.bothSet(secretSetting, 'clientAssertionFile')}: ${METHOD} sends the file's assertion and no secret; remove the secret`,
      );
    }
    if (ctx.given('clientAssertionKeyFile')) {
      ctx.problem(`${ctx.bothSet('clientAssertionKeyFile', 'clientAssertionFile')}: ${METHOD} sends the file's assertion; remove the key`);
    }
    const path = ctx.config.clientAssertionFile;
    if (!ctx.given('clientAssertionFile')) {
      ctx.problem(`${ctx.name('clientAssertionFile')} is required with ${METHOD}: the file a projected token or JWT-SVID is written to`);
    }
    if (path === undefined) return {};
    const text = ctx.readFile('clientAssertionFile');
    if (text === undefined) return {};
    try {
      summarizeAssertion(text.trim());
      return { assertion: text.trim() };
    } catch {
      ctx.problem(`${ctx.name('clientAssertionFile')} does not hold a compact JWT (header.payload.signature): ${path}`);
      return {};
    }
  },

  configure(config, deps) {
    const path = config.clientAssertionFile!;
    const initial = deps.startup.assertion!;
    return {
      clientAuth: {
        authenticate: assertionFromFile({ path, read: deps.read, assertionType: config.clientAssertionType, now: () => deps.clock.now() }),
        explainRefusal: (credential) => clientAssertionFile.explainRefusal(credential, config),
      },
      credential: { clientId: config.clientId!, clientSecret: '' },
      watch: (target) =>
        watchSecretFile({
          path,
          initial,
          clock: deps.clock,
          log: deps.log,
          onChange: () => target.refreshNow('client assertion file changed'),
        }),
      describe: (nowMs) => describeAssertion(path, () => deps.read(path), nowMs),
      material: () => ({}),
    };
  },

  explainRefusal: (_credential, config) => ({
    credentials:
      `CLIENT_ID and the assertion in ${config.clientAssertionFile} ` +
      '(its issuer, subject and audience, as the identity provider expects them)',
  }),

  // The assertion is another party's, rotated under the proxy: it names the client, and is no key.
  storeDescription: () => [],
  storeKeyMaterial: () => ({ from: 'key_file' }),
};
