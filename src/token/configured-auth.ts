import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import type { Log } from '../core/log.js';
import { loadAssertionKey, type AssertionKey } from './assertion-key.js';
import {
  clientAssertionFile,
  clientSecretBasic,
  clientSecretPost,
  privateKeyJwt,
  summarizeAssertion,
  tlsClientAuth,
  type ClientAuth,
} from './client-auth.js';
import type { Credential } from './fetch-token.js';
import { watchSecretFile } from './secret-file.js';
import type { TokenStartup } from './settings.js';

/** The configured client's way of authenticating, built once from the configuration. */
export interface ConfiguredAuth {
  readonly clientAuth: ClientAuth;
  /** The configured credential, when there is one (the secret is empty for the methods without one). */
  readonly credential: Credential | undefined;
  /**
   * Watches the key or assertion file (PRODUCT §12.5): on a change `onChange` receives a credential
   * that differs from the last one, so the token source fetches at once. Returns the stop function.
   */
  watch(onChange: (credential: Credential) => void): (() => void) | undefined;
  /** Lines for `check` about the credential; never the assertion or the key. */
  describe(nowMs: number): string[];
}

export interface ConfiguredAuthDeps {
  clock: Clock;
  log: Log;
  /** The secret, key or assertion as read and checked at start. */
  startup: TokenStartup;
  read?: (path: string) => string;
}

/** A fingerprint that changes with a file's content and reveals nothing of it. */
function revision(content: string): string {
  return `rev:${createHash('sha256').update(content).digest('base64url')}`;
}

/**
 * Builds the strategy for TOKEN_AUTH_METHOD from the configuration and what its check read at start.
 */
export function configuredAuth(config: Config, deps: ConfiguredAuthDeps): ConfiguredAuth {
  const read = deps.read ?? ((p: string) => readFileSync(p, 'utf8'));
  const clientId = config.clientId;
  const none = { watch: () => undefined, describe: () => [] };
  switch (config.tokenAuthMethod) {
    case 'client_secret_post':
    case 'client_secret_basic': {
      const secret = deps.startup.clientSecret;
      const credential = clientId !== undefined && secret !== undefined ? { clientId, clientSecret: secret } : undefined;
      return { clientAuth: config.tokenAuthMethod === 'client_secret_basic' ? clientSecretBasic : clientSecretPost, credential, ...none };
    }
    case 'tls_client_auth':
      return { clientAuth: tlsClientAuth, credential: clientId === undefined ? undefined : { clientId, clientSecret: '' }, ...none };
    case 'private_key_jwt': {
      const path = config.clientAssertionKeyFile!;
      const pem = deps.startup.assertionKey!.text;
      let key: AssertionKey = deps.startup.assertionKey!.key;
      return {
        clientAuth: privateKeyJwt({ key: () => key.key, alg: key.alg, kid: config.clientAssertionKid, now: () => deps.clock.now() }),
        credential: { clientId: clientId!, clientSecret: revision(pem) },
        watch: (onChange) =>
          watchSecretFile({
            path,
            initial: pem.trim(),
            clock: deps.clock,
            log: deps.log,
            onChange: (next) => {
              try {
                key = loadAssertionKey(next, config.clientAssertionAlg);
              } catch (err) {
                deps.log.warn({ path, reason: (err as Error).message }, 'assertion key file changed but cannot be used; keeping the current key');
                return;
              }
              deps.log.info({ path }, 'assertion key changed; fetching a token with it');
              onChange({ clientId: clientId!, clientSecret: revision(next) });
            },
          }),
        describe: () => [`client authentication: private_key_jwt signed ${key.alg}${config.clientAssertionKid === undefined ? '' : ` (kid ${config.clientAssertionKid})`} with the key in ${path}`],
      };
    }
    case 'client_assertion_file': {
      const path = config.clientAssertionFile!;
      const initial = deps.startup.assertion!;
      return {
        clientAuth: clientAssertionFile({ path, read, assertionType: config.clientAssertionType, now: () => deps.clock.now() }),
        credential: { clientId: clientId!, clientSecret: revision(initial) },
        watch: (onChange) =>
          watchSecretFile({
            path,
            initial,
            clock: deps.clock,
            log: deps.log,
            onChange: (next) => onChange({ clientId: clientId!, clientSecret: revision(next) }),
          }),
        describe: (nowMs) => {
          try {
            const s = summarizeAssertion(read(path).trim());
            const life = s.expiresAt === undefined ? 'no exp claim' : `${Math.round(s.expiresAt - nowMs / 1000)} s left (expires ${new Date(s.expiresAt * 1000).toISOString()})`;
            return [`client assertion in ${path}: issuer ${s.issuer ?? '(none)'}, subject ${s.subject ?? '(none)'}, audience ${s.audience ?? '(none)'}, ${life}`];
          } catch (err) {
            return [`client assertion in ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`];
          }
        },
      };
    }
  }
}
