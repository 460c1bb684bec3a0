import { readFileSync } from 'node:fs';
import type { Clock } from '../core/clock.js';
import type { Config } from '../config/config.js';
import type { Log } from '../core/log.js';
import { loadAssertionKey, type AssertionKey } from './assertion-key.js';
import { clientAssertionFile, summarizeAssertion } from './assertion-file.js';
import { privateKeyJwt, secretClientAuth, tlsClientAuth, type ClientAuth, type Credential } from './client-auth.js';
import { watchSecretFile } from './secret-file.js';
import type { TokenStartup } from './settings.js';

/** What a watch tells when a file the credential is made of changes: a token source. */
export interface CredentialTarget {
  /** A new secret: fetch with it at once. */
  setCredential(credential: Credential): void;
  /** A new key or assertion file, the credential itself unchanged: fetch at once. */
  refreshNow(reason: string): void;
}

/**
 * The configured client (CLIENT_ID, TOKEN_AUTH_METHOD and the secret, key or assertion file):
 * how it authenticates, its credential, and the watches on the files it is made of.
 */
export interface ConfiguredCredential {
  readonly clientAuth: ClientAuth;
  /** The configured credential, when there is one (the secret is empty for the methods without one). */
  readonly credential: Credential | undefined;
  /**
   * Watches the secret, key or assertion file: a new secret is handed to `target.setCredential`,
   * a new key or assertion to `target.refreshNow`, so a token is fetched with it at once.
   * Returns the function that stops the watch.
   */
  watch(target: CredentialTarget): () => void;
  /** Lines for `check` about the credential; never the secret, the assertion or the key. */
  describe(nowMs: number): string[];
}

export interface ConfiguredCredentialDeps {
  clock: Clock;
  log: Log;
  /** The secret, key or assertion as the settings check read it at start. */
  startup: TokenStartup;
  read?: (path: string) => string;
}

type Deps = Required<ConfiguredCredentialDeps>;

const noWatch = (): (() => void) => () => {};

/**
 * The credential for TOKEN_AUTH_METHOD, from the configuration and what its check read at start
 * (each file is read once there; the watches start from that text).
 */
export function configuredCredential(config: Config, deps: ConfiguredCredentialDeps): ConfiguredCredential {
  const full = { ...deps, read: deps.read ?? ((p: string) => readFileSync(p, 'utf8')) };
  switch (config.tokenAuthMethod) {
    case 'client_secret_post':
    case 'client_secret_basic':
    case 'client_secret_jwt':
      return withSecret(config, full);
    case 'tls_client_auth':
      return {
        clientAuth: tlsClientAuth,
        credential: config.clientId === undefined ? undefined : { clientId: config.clientId, clientSecret: '' },
        watch: noWatch,
        describe: () => [],
      };
    case 'private_key_jwt':
      return withKey(config, full);
    case 'client_assertion_file':
      return withAssertionFile(config, full);
  }
}

function withSecret(config: Config, deps: Deps): ConfiguredCredential {
  const { clientId, clientSecretFile } = config;
  const clientSecret = deps.startup.clientSecret;
  return {
    clientAuth: secretClientAuth(config.tokenAuthMethod, () => deps.clock.now()),
    credential: clientId !== undefined && clientSecret !== undefined ? { clientId, clientSecret } : undefined,
    watch: (target) => {
      if (clientId === undefined || clientSecret === undefined || clientSecretFile === undefined) return () => {};
      return watchSecretFile({
        path: clientSecretFile,
        initial: clientSecret,
        clock: deps.clock,
        log: deps.log,
        onChange: (next) => target.setCredential({ clientId, clientSecret: next }),
      });
    },
    describe: () =>
      config.tokenAuthMethod === 'client_secret_jwt'
        ? ['client authentication: client_secret_jwt, an assertion signed HS256 with the secret (never sent)']
        : [],
  };
}

function withKey(config: Config, deps: Deps): ConfiguredCredential {
  const path = config.clientAssertionKeyFile!;
  const pem = deps.startup.assertionKey!.text;
  let key: AssertionKey = deps.startup.assertionKey!.key;
  const kid = config.clientAssertionKid;
  return {
    clientAuth: privateKeyJwt({ key: () => key.key, alg: key.alg, kid, now: () => deps.clock.now() }),
    credential: { clientId: config.clientId!, clientSecret: '' },
    watch: (target) =>
      watchSecretFile({
        path,
        initial: pem.trim(),
        clock: deps.clock,
        log: deps.log,
        onChange: (next) => {
          try {
            key = loadAssertionKey(next, config.clientAssertionAlg);
          } catch (err) {
            deps.log.warn(
              { path, reason: (err as Error).message },
              'assertion key file changed but cannot be used; keeping the current key',
            );
            return;
          }
          deps.log.info({ path }, 'assertion key changed; fetching a token with it');
          target.refreshNow('assertion key changed');
        },
      }),
    describe: () => [
      `client authentication: private_key_jwt signed ${key.alg}${kid === undefined ? '' : ` (kid ${kid})`} with the key in ${path}`,
    ],
  };
}

function withAssertionFile(config: Config, deps: Deps): ConfiguredCredential {
  const path = config.clientAssertionFile!;
  const initial = deps.startup.assertion!;
  return {
    clientAuth: clientAssertionFile({ path, read: deps.read, assertionType: config.clientAssertionType, now: () => deps.clock.now() }),
    credential: { clientId: config.clientId!, clientSecret: '' },
    watch: (target) =>
      watchSecretFile({
        path,
        initial,
        clock: deps.clock,
        log: deps.log,
        onChange: () => target.refreshNow('client assertion file changed'),
      }),
    describe: (nowMs) => {
      try {
        const s = summarizeAssertion(deps.read(path).trim());
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
    },
  };
}
