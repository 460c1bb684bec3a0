/**
 * How the client proves who it is at the token endpoint: the table of client authentication
 * methods, one record each, and the two ways a record is chosen (the configured client, and the
 * callers' own Basic credentials). A new method is a record in a file of its own, listed here,
 * and its name in `TOKEN_AUTH_METHODS` (config/config.ts): the compiler and
 * `test/unit/auth-methods.test.ts` say what is missing.
 */
import { readFileSync } from 'node:fs';
import type { Config, TokenAuthMethod } from '../../config/config.js';
import { clientAssertionFile } from './client-assertion-file.js';
import { clientSecretBasic } from './client-secret-basic.js';
import { clientSecretJwt } from './client-secret-jwt.js';
import { clientSecretPost } from './client-secret-post.js';
import type { AuthMethod, ClientAuth, ConfiguredCredential, MethodDeps } from './method.js';
import { privateKeyJwt } from './private-key-jwt.js';
import { tlsClientAuth } from './tls-client-auth.js';

/** Every client authentication method, in the order of `TOKEN_AUTH_METHODS`. */
const RECORDS = [clientSecretPost, clientSecretBasic, privateKeyJwt, tlsClientAuth, clientAssertionFile, clientSecretJwt] as const;

// A name of TOKEN_AUTH_METHODS without its record here fails to compile.
const _everyNameHasARecord: [Exclude<TokenAuthMethod, (typeof RECORDS)[number]['name']>] extends [never] ? true : never = true;

/** Every client authentication method. */
export const AUTH_METHODS: readonly AuthMethod[] = RECORDS;

const readText = (path: string): string => readFileSync(path, 'utf8');

const BY_NAME = new Map<string, AuthMethod>(AUTH_METHODS.map((m) => [m.name, m]));

/** The record of the method `name`. */
export function authMethod(name: TokenAuthMethod): AuthMethod {
  return BY_NAME.get(name)!;
}

/**
 * The configured client (CLIENT_ID, TOKEN_AUTH_METHOD and the secret, key or assertion file), as
 * its method configures it from the settings and what its check read at start (each file is read
 * once there; the watches start from that text).
 */
export function configuredCredential(config: Config, deps: Omit<MethodDeps, 'read'> & { read?: MethodDeps['read'] }): ConfiguredCredential {
  return authMethod(config.tokenAuthMethod).configure(config, { ...deps, read: deps.read ?? readText });
}

/**
 * How pass-through Basic credentials authenticate: they carry a secret whatever the configured
 * method, so they are sent the configured method's way when it uses a secret, and in the form
 * body (the default method) otherwise.
 */
export function passthroughClientAuth(config: Config, deps: Omit<MethodDeps, 'startup' | 'read'>): ClientAuth {
  // A secret method configured without a secret of its own: no credential, but it authenticates.
  return passthroughMethod(config).configure(config, { ...deps, startup: { clientSecret: undefined }, read: readText }).clientAuth;
}

/** The method pass-through Basic credentials are sent with: the configured one when it uses a secret, else the default method. */
export function passthroughMethod(config: Pick<Config, 'tokenAuthMethod'>): AuthMethod {
  const method = authMethod(config.tokenAuthMethod);
  return method.usesSecret ? method : clientSecretPost;
}

export { JWT_BEARER } from './jwt-assertion.js';
export type {
  AuthMethod,
  ClientAuth,
  ClientAuthParts,
  ConfiguredCredential,
  Credential,
  CredentialMaterial,
  CredentialTarget,
  DescriptionPart,
  RefusalExplanation,
  StoreKeyMaterial,
  TokenStartup,
} from './method.js';
