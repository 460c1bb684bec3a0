import { generateKeyPairSync, type KeyObject } from 'node:crypto';

/** A PEM private key of each type DPoP proofs can be signed with, made at test time. */
export const PEMS = {
  'P-256': pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey),
  'P-384': pem(generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey),
  ed25519: pem(generateKeyPairSync('ed25519').privateKey),
  rsa: pem(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey),
};

/** Keys no proof may be signed with, and the public half of a good one. */
export const BAD_PEMS = {
  rsa1024: pem(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey),
  secp256k1: pem(generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).privateKey),
  x25519: pem(generateKeyPairSync('x25519').privateKey),
  publicP256: generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }) as string,
};

function pem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }) as string;
}
