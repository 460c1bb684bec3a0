import { describe, expect, it } from 'vitest';
import { watchSecretFiles } from '../../src/store/secret-files.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';

const PASSWORD_FILE = '/secrets/store-password';
const KEY_FILE = '/secrets/store-key';
const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => 0xe0 + (i % 16)));

function setup() {
  const clock = new FakeClock();
  const log = new FakeLog();
  const files = new Map<string, Uint8Array>([
    [PASSWORD_FILE, Buffer.from('first-password\n')],
    [KEY_FILE, KEY],
  ]);
  const initial = { password: 'first-password', passwordFileText: 'first-password\n', keyMaterial: KEY };
  const passwords: string[] = [];
  const keys: Uint8Array[] = [];
  const stop = watchSecretFiles({
    passwordFile: PASSWORD_FILE,
    keyFile: KEY_FILE,
    initial,
    onPassword: (p) => passwords.push(p),
    onKeyMaterial: (k) => keys.push(k),
    clock,
    log,
    read: async (path) => files.get(path) ?? Promise.reject(Object.assign(new Error('ENOENT'), { code: 'ENOENT' })),
  });
  return { clock, log, files, passwords, keys, stop };
}

describe('the token store files, watched', () => {
  it('hand on a new password within 2 s, trimmed, and nothing while it stays the same', async () => {
    const t = setup();
    await t.clock.advance(3_000);
    expect(t.passwords).toEqual([]);
    t.files.set(PASSWORD_FILE, Buffer.from('second-password\n'));
    await t.clock.advance(2_000);
    expect(t.passwords).toEqual(['second-password']);
    t.files.set(PASSWORD_FILE, Buffer.from('first-password'));
    await t.clock.advance(2_000);
    expect(t.passwords).toEqual(['second-password', 'first-password']);
    t.stop();
  });

  it('hand on new key material as its exact bytes, and keep the old through a short or missing file', async () => {
    const t = setup();
    t.files.set(KEY_FILE, KEY.subarray(0, 20));
    await t.clock.advance(2_000);
    t.files.delete(KEY_FILE);
    await t.clock.advance(2_000);
    expect(t.keys).toEqual([]);
    expect(t.log.at('warn').map((l) => l.obj)).toEqual([
      expect.objectContaining({ path: KEY_FILE, reason: 'the file holds 20 bytes, fewer than 32' }),
      expect.objectContaining({ path: KEY_FILE, code: 'ENOENT' }),
    ]);
    const next = Buffer.from(Array.from({ length: 40 }, (_, i) => 0x80 + i));
    t.files.set(KEY_FILE, next);
    await t.clock.advance(2_000);
    expect(t.keys).toEqual([next]);
    expect(t.log.text()).not.toContain(next.toString('latin1'));
    t.stop();
  });
});
