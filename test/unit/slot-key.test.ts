import { describe, expect, it } from 'vitest';
import { openEntry, sealEntry } from '../../src/store/entry.js';
import { deriveSlotKey, describeCredential, FORMAT_VERSION, scryptDeriver, sharedDeriver, type SlotKey } from '../../src/store/slot-key.js';

const derive = sharedDeriver(scryptDeriver());
const DESCRIPTION = 'token_url=https://idp.example/token client_id=app';

function key(description = DESCRIPTION, material = 's3cret', prefix = 'ticket-auth-proxy:'): Promise<SlotKey> {
  return deriveSlotKey({ description, keyMaterial: Buffer.from(material), prefix, derive });
}

describe('the store key', () => {
  it('names entries as format v1 does, so proxies of every release with v1 share them (scrypt N=2^15 r=8 p=1, HKDF-SHA256)', async () => {
    // Pinned: a change to the derivation, the labels or the parameters must come with a new FORMAT_VERSION.
    const k = await key();
    expect(FORMAT_VERSION).toBe('v1');
    expect(k.entryKey).toBe('ticket-auth-proxy:v1:{3802191660f3ff3a1d621b6cfae789f13cb21d44268f7399850f963acfffa7c5}');
    expect(k.leaseKey).toBe(`${k.entryKey}:lease`);
    expect(k.failureKey).toBe(`${k.entryKey}:failure`);
    expect(k.fingerprint('tok')).toBe('8de7a466bb52f5798c447b8c972c2d7d95614671a17ffe72be259aa9a9c98c77');
  });

  it('names another credential, or the same one under rotated key material, apart', async () => {
    const names = new Set([
      (await key()).entryKey,
      (await key(`${DESCRIPTION} scope=a`)).entryKey,
      (await key(DESCRIPTION, 's3cret2')).entryKey,
    ]);
    expect(names.size).toBe(3);
  });

  it('seals with a fresh nonce, and opens only under the same key and the same name', async () => {
    const k = await key();
    const other = await key(DESCRIPTION, 'another secret');
    const sealed = k.seal('plain', 'name-a');
    expect(k.seal('plain', 'name-a')).not.toBe(sealed);
    expect(k.open(sealed, 'name-a')).toBe('plain');
    expect(k.open(sealed, 'name-b')).toBeUndefined();
    expect(other.open(sealed, 'name-a')).toBeUndefined();
    const bytes = Buffer.from(sealed, 'base64');
    bytes[14]! ^= 1;
    expect(k.open(bytes.toString('base64'), 'name-a')).toBeUndefined();
    expect(k.open('not base64 at all!', 'name-a')).toBeUndefined();
    expect(k.open('', 'name-a')).toBeUndefined();
  });

  it('opens an entry only when its clear fields agree with what it seals', async () => {
    const k = await key();
    const token = { accessToken: 'tok', tokenType: 'Bearer' as const, issuedAtMs: 1_000, expiresAtMs: 3_601_000, usableUntilMs: 3_591_000 };
    const fields = sealEntry(k, token);
    expect(fields.exp).toBe('3591000');
    expect(openEntry(k, fields)).toEqual(token);
    expect(openEntry(k, { ...fields, exp: '3591001' })).toBeUndefined();
    expect(openEntry(k, { ...fields, fp: k.fingerprint('another') })).toBeUndefined();
    expect(openEntry(k, { exp: fields.exp, ct: fields.ct })).toBeUndefined();
    const sealedElsewhere = { ...fields, ct: k.seal(JSON.stringify({ t: 'tok', y: 'Bearer', i: 1, e: 2, u: 3 }), k.entryKey) };
    expect(openEntry(k, sealedElsewhere)).toBeUndefined();
  });

  it('describes a credential so that no two lists of parts read the same', () => {
    const a = describeCredential([
      ['client_id', 'a,b'],
      ['scope', 'c'],
    ]);
    const b = describeCredential([
      ['client_id', 'a'],
      ['b', 'scope'],
      ['', 'c'],
    ]);
    expect(a).not.toBe(b);
    expect(a).toBe('[["client_id","a,b"],["scope","c"]]');
  });
});
