import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * The format version in every key name. Proxies of two releases that share a store either share
 * entries (the same version) or keep apart (another version), never misread each other's. The
 * scrypt parameters, the HKDF labels and the entry's layout are part of it.
 */
export const FORMAT_VERSION = 'v1';

/**
 * scrypt's cost (RFC 7914): N = 2^15, r = 8, p = 1, the parameters golang.org/x/crypto/scrypt
 * gives for interactive use: 32 MiB and about 85 ms of one core (`node bench/slot-key.js`). A
 * copy of the store then costs whoever tests guesses of a weak secret as much per guess. 2^14
 * would halve the CPU, but glibc's malloc serves its 16 MiB from a thread's arena after the first
 * derivation and keeps it: eight derivations in a row (pass-through credentials) left 65 MB
 * resident. From 32 MiB up an allocation is always mapped apart (glibc's largest threshold) and
 * given back when freed, as jemalloc gives back every size: under 1 MB left after eight. The
 * passing 32 MB is bounded by deriving one key at a time ({@link scryptDeriver}).
 */
export const SCRYPT = { N: 2 ** 15, r: 8, p: 1 } as const;

/** Room for scrypt's working set (128·N·r) and its small buffers; Node refuses the call without it. */
const SCRYPT_MAXMEM = 128 * SCRYPT.N * SCRYPT.r + 1024 * 1024;

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * A credential's description from its named parts (token URL, client id, method, scope, each
 * extra token parameter, a certificate's or a DPoP key's thumbprint), in the order given: JSON,
 * so no two lists of parts read the same. Part of the key format: proxies build it alike or
 * share nothing.
 */
export function describeCredential(parts: ReadonlyArray<readonly [name: string, value: string]>): string {
  return JSON.stringify(parts);
}

/** Turns key material and a salt into the 32-byte store key. */
export type KeyDeriver = (material: Uint8Array, salt: string) => Promise<Buffer>;

/**
 * scrypt with {@link SCRYPT}, in libuv's thread pool (the event loop keeps serving), one derivation
 * at a time: pass-through credentials seen together derive in turn, so the memory it takes
 * passes once rather than once per thread of the pool.
 */
export function scryptDeriver(): KeyDeriver {
  let queue: Promise<unknown> = Promise.resolve();
  return (material, salt) => {
    const run = queue.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          scrypt(material, salt, KEY_BYTES, { ...SCRYPT, maxmem: SCRYPT_MAXMEM }, (err, key) => (err ? reject(err) : resolve(key)));
        }),
    );
    queue = run.catch(() => undefined);
    return run;
  };
}

/**
 * One derivation per distinct material and salt, shared: for the fleet simulation, where ten
 * thousand simulated proxies hold one credential, and for tests. A real proxy derives each key
 * once anyway and keeps no material, so it has no use for this.
 */
export function sharedDeriver(inner: KeyDeriver): KeyDeriver {
  const derived = new Map<string, Promise<Buffer>>();
  return (material, salt) => {
    const id = `${Buffer.from(material).toString('base64')}\0${salt}`;
    let key = derived.get(id);
    if (key === undefined) derived.set(id, (key = inner(material, salt)));
    return key.then((k) => Buffer.from(k));
  };
}

/** The names and the ciphers of one credential's part of the store. */
export interface SlotKey {
  /** The entry: `prefix` + `v1:{` + hex HMAC of the credential's description + `}`. */
  readonly entryKey: string;
  /** The lease, in the entry's hash slot (the hash tag is the same). */
  readonly leaseKey: string;
  /** The shared failure record, in the same slot. */
  readonly failureKey: string;
  /** The token's fingerprint: hex HMAC under the naming subkey; compared by delete-if-same. */
  fingerprint(accessToken: string): string;
  /** AES-256-GCM with a fresh random 96-bit nonce, `associated` as associated data; base64 of nonce, ciphertext, tag. */
  seal(plaintext: string, associated: string): string;
  /** The plaintext, or undefined when `sealed` was not sealed under this key with this associated data. */
  open(sealed: string, associated: string): string | undefined;
}

function subkey(storeKey: Buffer, purpose: string): Buffer {
  return Buffer.from(
    hkdfSync('sha256', storeKey, Buffer.alloc(0), `ticket-auth-proxy token store ${FORMAT_VERSION} ${purpose}`, KEY_BYTES),
  );
}

function hmacHex(key: Buffer, label: string, text: string): string {
  return createHmac('sha256', key).update(label).update('\0').update(text).digest('hex');
}

/**
 * Derives a credential's store key once (scrypt, salted with its description), then with
 * HKDF-SHA256 one subkey that names (the entry, the token's fingerprint) and one that encrypts.
 * The description reaches the store only as an HMAC under the naming subkey, so neither it nor
 * anything it holds (client id, scope, URL) can be read or confirmed without the key material.
 */
export async function deriveSlotKey(input: {
  description: string;
  keyMaterial: Uint8Array;
  prefix: string;
  derive: KeyDeriver;
}): Promise<SlotKey> {
  const storeKey = await input.derive(input.keyMaterial, input.description);
  const naming = subkey(storeKey, 'naming');
  const encryption = subkey(storeKey, 'encryption');
  const entryKey = `${input.prefix}${FORMAT_VERSION}:{${hmacHex(naming, 'credential', input.description)}}`;
  return {
    entryKey,
    leaseKey: `${entryKey}:lease`,
    failureKey: `${entryKey}:failure`,
    fingerprint: (accessToken) => hmacHex(naming, 'token', accessToken),
    seal(plaintext, associated) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', encryption, nonce).setAAD(Buffer.from(associated, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64');
    },
    open(sealed, associated) {
      const bytes = Buffer.from(sealed, 'base64');
      if (bytes.length < NONCE_BYTES + TAG_BYTES || bytes.toString('base64') !== sealed) return undefined;
      try {
        const decipher = createDecipheriv('aes-256-gcm', encryption, bytes.subarray(0, NONCE_BYTES)).setAAD(
          Buffer.from(associated, 'utf8'),
        );
        decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
        return Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        return undefined;
      }
    },
  };
}

/** Compares two fingerprints (hex) in constant time. */
export function sameFingerprint(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}
