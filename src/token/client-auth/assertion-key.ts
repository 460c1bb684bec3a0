import { createPrivateKey, type KeyObject } from 'node:crypto';

/** The algorithms a signed client assertion may use, by key type. */
const ALGS_BY_KEY: Record<string, readonly string[]> = {
  rsa: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'],
  'P-256': ['ES256'],
  'P-384': ['ES384'],
  ed25519: ['EdDSA'],
};

/** Every algorithm CLIENT_ASSERTION_ALG accepts. */
export const ASSERTION_ALGS: readonly string[] = [...new Set(Object.values(ALGS_BY_KEY).flat())];

/** A signing key read from CLIENT_ASSERTION_KEY_FILE, with the algorithm it signs with. */
export interface AssertionKey {
  readonly key: KeyObject;
  readonly alg: string;
}

/**
 * Reads the PEM private key client assertions are signed with (CLIENT_ASSERTION_KEY_FILE): RSA
 * of at least 2048 bits, EC P-256 or P-384, or Ed25519. The algorithm defaults by key type
 * (RS256, ES256, ES384, EdDSA); one that does not fit the key is refused. Throws an Error whose message says what is wrong, never the key.
 */
export function loadAssertionKey(pem: string, alg: string | undefined): AssertionKey {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new Error('does not hold a PEM private key');
  }
  const details = key.asymmetricKeyDetails ?? {};
  let kind: string;
  if (key.asymmetricKeyType === 'rsa') {
    if ((details.modulusLength ?? 0) < 2048)
      throw new Error(`holds an RSA key of ${details.modulusLength ?? 0} bits; at least 2048 are required`);
    kind = 'rsa';
  } else if (key.asymmetricKeyType === 'ec' && (details.namedCurve === 'prime256v1' || details.namedCurve === 'secp384r1')) {
    kind = details.namedCurve === 'prime256v1' ? 'P-256' : 'P-384';
  } else if (key.asymmetricKeyType === 'ed25519') {
    kind = 'ed25519';
  } else {
    const what =
      key.asymmetricKeyType === 'ec'
        ? `an EC key on ${details.namedCurve ?? 'an unknown curve'}`
        : `a ${key.asymmetricKeyType ?? 'an unknown'} key`;
    throw new Error(`holds ${what}; use RSA (2048 bits or more), EC P-256 or P-384, or Ed25519`);
  }
  const fits = ALGS_BY_KEY[kind]!;
  if (alg !== undefined && !fits.includes(alg)) throw new Error(`holds a ${kind} key, which cannot sign ${alg} (use ${fits.join(', ')})`);
  return { key, alg: alg ?? fits[0]! };
}
