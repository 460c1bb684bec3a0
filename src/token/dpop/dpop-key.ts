import { constants, createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { DpopAlg } from '../../config/config.js';

/** The proof algorithms each key type can sign, the default first. */
const ALGS_BY_KEY: Readonly<Record<string, readonly DpopAlg[]>> = {
  'P-256': ['ES256'],
  'P-384': ['ES384'],
  ed25519: ['EdDSA'],
  rsa: ['PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512'],
};

/** Every algorithm a DPoP key of some type can sign. */
export const SUPPORTED_DPOP_ALGS: readonly DpopAlg[] = Object.values(ALGS_BY_KEY).flat();

/** RFC 7638 §3.2: the members of the thumbprint's input, per key type, in lexicographic order. */
const THUMBPRINT_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  OKP: ['crv', 'kty', 'x'],
  RSA: ['e', 'kty', 'n'],
};

/**
 * A key DPoP proofs are signed with. The private key stays inside {@link DpopKey.sign}: no
 * property holds it, so logging or serialising this object shows only public values.
 */
export interface DpopKey {
  readonly alg: DpopAlg;
  /** The public key as a JWK (RFC 7517), without any private member. */
  readonly jwk: Readonly<Record<string, string>>;
  /** RFC 7638 JWK SHA-256 thumbprint, base64url: what a DPoP-bound token's `cnf.jkt` holds. */
  readonly thumbprint: string;
  /** The proof's JOSE header (`typ`, `alg`, `jwk`), encoded once: base64url of its JSON. */
  readonly encodedHeader: string;
  /** Signs a JWS signing input; the signature as JWS wants it (ECDSA in IEEE P1363 form). */
  readonly sign: (input: Buffer) => Buffer;
}

function keyKind(key: KeyObject): string {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < 2048) throw new Error(`holds an RSA key of ${bits} bits; at least 2048 are required`);
    return 'rsa';
  }
  if (key.asymmetricKeyType === 'ec' && details.namedCurve === 'prime256v1') return 'P-256';
  if (key.asymmetricKeyType === 'ec' && details.namedCurve === 'secp384r1') return 'P-384';
  if (key.asymmetricKeyType === 'ed25519') return 'ed25519';
  const what =
    key.asymmetricKeyType === 'ec'
      ? `an EC key on ${details.namedCurve ?? 'an unknown curve'}`
      : `a key of type ${key.asymmetricKeyType ?? 'unknown'}`;
  throw new Error(`holds ${what}; use EC P-256 (ES256), P-384 (ES384), Ed25519 (EdDSA) or RSA of 2048 bits or more (PS256)`);
}

/** The signing function for an algorithm, its options built once (this runs per proof). */
function signerFor(alg: DpopAlg, key: KeyObject): (input: Buffer) => Buffer {
  const hash = `sha${alg.slice(2)}`;
  switch (alg.slice(0, 2)) {
    case 'ES': {
      // RFC 7518 §3.4: the JWS signature is R || S, not the DER sequence OpenSSL makes. Node's
      // `dsaEncoding: 'ieee-p1363'` would convert it, but an options object around the key costs
      // about as much again as the signature (about 90 µs against 40 per ES256 proof, Node 24), so
      // the DER form is signed with the bare key and converted here.
      const size = alg === 'ES256' ? 32 : 48;
      return (input) => derToRs(sign(hash, input, key), size);
    }
    case 'Ed':
      return (input) => sign(null, input, key);
    case 'PS': {
      // RFC 7518 §3.5: RSASSA-PSS with MGF1 of the same hash and a salt as long as the hash.
      const options = { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST };
      return (input) => sign(hash, input, options);
    }
    default:
      return (input) => sign(hash, input, key);
  }
}

/**
 * An ECDSA signature in DER (`SEQUENCE { INTEGER r, INTEGER s }`) as R || S, each left-padded to
 * `size` bytes (RFC 7518 §3.4); DER's leading zero of a high-bit integer is dropped.
 */
export function derToRs(der: Buffer, size: number): Buffer {
  let at = der[1]! & 0x80 ? 2 + (der[1]! & 0x7f) : 2;
  const out = Buffer.alloc(2 * size);
  for (let part = 1; part <= 2; part++) {
    const length = der[at + 1]!;
    let start = at + 2;
    const end = start + length;
    while (end - start > size) start++;
    der.copy(out, part * size - (end - start), start, end);
    at = end;
  }
  return out;
}

/** RFC 7638 thumbprint of a public JWK: SHA-256 of the required members in order, base64url. */
export function jwkThumbprint(jwk: Readonly<Record<string, string>>): string {
  const members = THUMBPRINT_MEMBERS[jwk.kty ?? ''];
  if (members === undefined) throw new Error(`no thumbprint for a key of type ${jwk.kty ?? 'unknown'}`);
  const json = `{${members.map((m) => `${JSON.stringify(m)}:${JSON.stringify(jwk[m])}`).join(',')}}`;
  return createHash('sha256').update(json).digest('base64url');
}

/** How a message names a key type. */
const KIND_NAMES: Readonly<Record<string, string>> = { 'P-256': 'a P-256', 'P-384': 'a P-384', ed25519: 'an Ed25519', rsa: 'an RSA' };

/** Builds the {@link DpopKey} of a private key whose type and algorithm were checked. */
function dpopKeyOf(privateKey: KeyObject, alg: DpopAlg): DpopKey {
  const exported = createPublicKey(privateKey).export({ format: 'jwk' }) as Record<string, string>;
  const jwk: Record<string, string> = {};
  for (const m of THUMBPRINT_MEMBERS[exported.kty!]!) jwk[m] = exported[m]!;
  Object.freeze(jwk);
  const header = JSON.stringify({ typ: 'dpop+jwt', alg, jwk });
  return Object.freeze({
    alg,
    jwk,
    thumbprint: jwkThumbprint(jwk),
    encodedHeader: Buffer.from(header).toString('base64url'),
    sign: signerFor(alg, privateKey),
  });
}

/**
 * Reads a PEM private key for DPoP proofs: EC P-256 (ES256), P-384 (ES384), Ed25519 (EdDSA), or
 * RSA of 2048 bits or more (PS256 by default; `alg` may choose PS384, PS512 or RS256-RS512).
 * Throws an Error whose message says what is wrong (to follow the setting's name), never the key.
 */
export function loadDpopKey(pem: string, alg?: DpopAlg): DpopKey {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    let isPublic = false;
    try {
      isPublic = createPublicKey(pem).type === 'public';
    } catch {
      // Neither: not a key at all.
    }
    throw new Error(
      isPublic ? 'holds a public key or certificate; the proofs need the private key' : 'does not hold an unencrypted PEM private key',
    );
  }
  const kind = keyKind(key);
  const fits = ALGS_BY_KEY[kind]!;
  if (alg !== undefined && !fits.includes(alg))
    throw new Error(`holds ${KIND_NAMES[kind]!} key, which cannot sign ${alg} (use ${fits.join(', ')})`);
  return dpopKeyOf(key, alg ?? fits[0]!);
}

/**
 * Generates a key for DPoP proofs, kept in memory only: EC P-256 for ES256 (the default), or the
 * key type another algorithm needs (P-384, Ed25519, RSA 2048).
 */
export function generateDpopKey(alg: DpopAlg = 'ES256'): DpopKey {
  let pair: { privateKey: KeyObject };
  if (alg === 'ES256' || alg === 'ES384') pair = generateKeyPairSync('ec', { namedCurve: alg === 'ES256' ? 'P-256' : 'P-384' });
  else if (alg === 'EdDSA') pair = generateKeyPairSync('ed25519');
  else pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return dpopKeyOf(pair.privateKey, alg);
}
