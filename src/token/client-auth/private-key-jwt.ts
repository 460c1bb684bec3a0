/**
 * `private_key_jwt` (RFC 7523 §2.2 and §3, OpenID Connect Core §9): the client proves who it is
 * with an assertion signed by its private key (CLIENT_ASSERTION_KEY_FILE) for every token request;
 * the identity provider holds the public key. No secret is sent.
 */
import { randomUUID, type KeyObject } from 'node:crypto';
import { watchSecretFile } from '../secret-file.js';
import { loadAssertionKey, type AssertionKey } from './assertion-key.js';
import { clientAssertionFile } from './client-assertion-file.js';
import { assertionClaims, assertionParts, JWT_BEARER } from './jwt-assertion.js';
import type { AuthMethod, Authenticate, TokenStartup } from './method.js';

/** Options of {@link privateKeyJwtAssertion}. */
export interface PrivateKeyJwtOptions {
  /** The current signing key (reread by the caller when its file changes). */
  key: () => KeyObject;
  alg: string;
  kid: string | undefined;
  /** Milliseconds since the epoch. */
  now: () => number;
  randomId?: () => string;
}

/** A fresh assertion signed with the key for every token request. */
export function privateKeyJwtAssertion(options: PrivateKeyJwtOptions): Authenticate {
  const randomId = options.randomId ?? randomUUID;
  return async (credential, tokenUrl) => {
    const header = options.kid === undefined ? { alg: options.alg } : { alg: options.alg, kid: options.kid };
    // jose is loaded only where an assertion is signed: what a configuration does not use is not
    // loaded (about 0.8 MB of resident memory for every other proxy).
    const { SignJWT } = await import('jose');
    const assertion = await new SignJWT(assertionClaims(credential.clientId, tokenUrl, randomId(), options.now()))
      .setProtectedHeader({ ...header, typ: 'JWT' })
      .sign(options.key());
    return assertionParts(credential.clientId, JWT_BEARER, assertion);
  };
}

const METHOD = 'TOKEN_AUTH_METHOD=private_key_jwt';

export const privateKeyJwt: AuthMethod<'private_key_jwt'> = {
  name: 'private_key_jwt',
  usesSecret: false,
  proofSetting: 'clientAssertionKeyFile',
  proofOptions: ['clientAssertionKid', 'clientAssertionAlg'],
  listedAs: 'private_key_jwt',

  check(ctx, secretSetting): Partial<TokenStartup> {
    if (ctx.given(secretSetting)) {
      ctx.problem(
        `${ctx.bothSet(secretSetting, 'clientAssertionKeyFile')}: ${METHOD} signs with the key and sends no secret; remove the secret`,
      );
    }
    if (ctx.given('clientAssertionFile')) {
      ctx.problem(`${ctx.name('clientAssertionFile')} is set with ${METHOD}: it belongs to TOKEN_AUTH_METHOD=${clientAssertionFile.name}`);
    }
    const path = ctx.config.clientAssertionKeyFile;
    if (!ctx.given('clientAssertionKeyFile')) {
      ctx.problem(
        `${ctx.name('clientAssertionKeyFile')} is required with ${METHOD}: a PEM private key (RSA 2048+, EC P-256/P-384 or Ed25519)`,
      );
    }
    if (path === undefined) return {};
    const text = ctx.readFile('clientAssertionKeyFile');
    if (text === undefined) return {};
    try {
      return { assertionKey: { text, key: loadAssertionKey(text, ctx.config.clientAssertionAlg) } };
    } catch (err) {
      ctx.problem(`${ctx.name('clientAssertionKeyFile')} ${(err as Error).message}: ${path}`);
      return {};
    }
  },

  configure(config, deps) {
    const path = config.clientAssertionKeyFile!;
    const pem = deps.startup.assertionKey!.text;
    let key: AssertionKey = deps.startup.assertionKey!.key;
    const kid = config.clientAssertionKid;
    return {
      clientAuth: {
        authenticate: privateKeyJwtAssertion({ key: () => key.key, alg: key.alg, kid, now: () => deps.clock.now() }),
        explainRefusal: (credential) => privateKeyJwt.explainRefusal(credential, config),
      },
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
      material: () => ({ assertionKey: key.key }),
    };
  },

  explainRefusal: () => ({
    credentials:
      'CLIENT_ID and the key (CLIENT_ASSERTION_KEY_FILE, CLIENT_ASSERTION_KID) whose public key the identity provider has ' +
      'registered for it',
  }),

  // The key differs from one client to the next: the store key derived from it keeps them apart.
  storeDescription: () => [],

  storeKeyMaterial(material) {
    if (material.assertionKey === undefined) throw new Error('private_key_jwt derives the store key from the private key; none was given');
    // The key itself (PKCS #8), not its file: the same key written as PKCS #1 or PKCS #8 is one key.
    return { from: 'private_key', secret: material.assertionKey.export({ type: 'pkcs8', format: 'der' }) };
  },
};
