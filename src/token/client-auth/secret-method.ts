/**
 * What the methods proven by the client secret share (RFC 6749 §2.3.1, RFC 7523 §2.2): no
 * settings of their own beyond the secret (the rules on it are every method's, in
 * `token/settings.ts`), the credential from CLIENT_ID and the secret, the secret file watched, and
 * the store key derived from the secret.
 */
import type { TokenAuthMethod } from '../../config/config.js';
import { watchSecretFile } from '../secret-file.js';
import type { AuthMethod, Authenticate, Credential, RefusalExplanation } from './method.js';

/** The settings a secret method's proof is made of. */
export const SECRET_SETTINGS = 'CLIENT_ID and the secret (CLIENT_SECRET_FILE or CLIENT_SECRET)';

/** What sets one secret method apart from the others. */
export interface SecretMethodSpec<Name extends TokenAuthMethod> {
  readonly name: Name;
  /** How a request is authenticated with the secret; `now` dates an assertion. */
  authenticate(now: () => number): Authenticate;
  explainRefusal(credential: Credential): RefusalExplanation;
  /** What `check` says of the method, when there is more to say than its name. */
  readonly checkLines?: readonly string[];
}

/**
 * The record of a method proven by the client secret. Configured without a secret of its own
 * (pass-through credentials only), it has no credential but still authenticates: pass-through
 * Basic credentials bring their secret.
 */
export function secretMethod<Name extends TokenAuthMethod>(spec: SecretMethodSpec<Name>): AuthMethod<Name> {
  return {
    name: spec.name,
    usesSecret: true,
    listedAs: spec.name,
    check: () => ({}),
    configure(config, deps) {
      const { clientId, clientSecretFile } = config;
      const clientSecret = deps.startup.clientSecret;
      let current = clientSecret;
      return {
        clientAuth: { authenticate: spec.authenticate(() => deps.clock.now()), explainRefusal: spec.explainRefusal },
        credential: clientId !== undefined && clientSecret !== undefined ? { clientId, clientSecret } : undefined,
        watch: (target) => {
          if (clientId === undefined || clientSecret === undefined || clientSecretFile === undefined) return () => {};
          return watchSecretFile({
            path: clientSecretFile,
            initial: clientSecret,
            clock: deps.clock,
            log: deps.log,
            onChange: (next) => {
              current = next;
              target.setCredential({ clientId, clientSecret: next });
            },
          });
        },
        describe: () => [...(spec.checkLines ?? [])],
        material: () => ({ clientSecret: current }),
      };
    },
    explainRefusal: (credential) => spec.explainRefusal(credential),
    storeDescription: () => [],
    storeKeyMaterial(material) {
      if (material.clientSecret === undefined) throw new Error(`${spec.name} derives the store key from the client secret; none was given`);
      return { from: 'client_secret', secret: Buffer.from(material.clientSecret, 'utf8') };
    },
  };
}
