import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { systemClock } from '../../src/core/clock.js';
import { loadAssertionKey } from '../../src/token/client-auth/assertion-key.js';
import { configuredCredential, type Credential, type CredentialTarget } from '../../src/token/client-auth/index.js';
import type { TokenStartup } from '../../src/token/client-auth/index.js';
import { FakeLog } from '../helpers/fakes.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function dir(): { write(name: string, text: string): string } {
  const d = mkdtempSync(join(tmpdir(), 'tap-cred-'));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return {
    write(name, text) {
      // Replaced by a rename, as a writer that rotates a file does.
      writeFileSync(join(d, `${name}.tmp`), text);
      renameSync(join(d, `${name}.tmp`), join(d, name));
      return join(d, name);
    },
  };
}

const pem = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const jwt = (exp: number) =>
  `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify({ iss: 'https://cluster', sub: 'app', aud: 'idp', exp })).toString('base64url')}.sig`;

/** A target that records what the watch told it, and resolves `next` on the next call. */
function target() {
  const calls: { setCredential?: Credential; refreshNow?: string }[] = [];
  let wake: () => void = () => {};
  const t: CredentialTarget & { calls: typeof calls; next(timeoutMs?: number): Promise<void> } = {
    calls,
    setCredential: (credential) => void (calls.push({ setCredential: credential }), wake()),
    refreshNow: (reason) => void (calls.push({ refreshNow: reason }), wake()),
    next: (timeoutMs = 5_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the watch told nothing in time')), timeoutMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
  };
  return t;
}

/** What the settings check reads at start: the secret, the key file's text and key, the assertion. */
function startupOf(config: Partial<Config>): TokenStartup {
  const keyText = config.clientAssertionKeyFile === undefined ? undefined : readFileSync(config.clientAssertionKeyFile, 'utf8');
  return {
    clientSecret: config.clientSecret,
    ...(keyText === undefined ? {} : { assertionKey: { text: keyText, key: loadAssertionKey(keyText, config.clientAssertionAlg) } }),
    ...(config.clientAssertionFile === undefined ? {} : { assertion: readFileSync(config.clientAssertionFile, 'utf8').trim() }),
  };
}

function credential(config: Partial<Config>, log = new FakeLog()) {
  const full = { clientAssertionAlg: undefined, clientAssertionKid: undefined, ...config } as Config;
  return configuredCredential(full, { clock: systemClock, log, startup: startupOf(full) });
}

describe('the configured credential and its watches', () => {
  it('hands a new secret from the secret file to setCredential', async () => {
    const d = dir();
    const path = d.write('secret', 'one\n');
    const c = credential({ tokenAuthMethod: 'client_secret_basic', clientId: 'app', clientSecret: 'one', clientSecretFile: path });
    expect(c.credential).toEqual({ clientId: 'app', clientSecret: 'one' });
    const t = target();
    cleanups.push(c.watch(t));
    const told = t.next();
    d.write('secret', 'two\n');
    await told;
    expect(t.calls).toEqual([{ setCredential: { clientId: 'app', clientSecret: 'two' } }]);
  });

  it('asks for a token at once when the assertion key changes, keeping no fingerprint in the credential', async () => {
    const d = dir();
    const path = d.write('key.pem', pem());
    const log = new FakeLog();
    const c = credential({ tokenAuthMethod: 'private_key_jwt', clientId: 'app', clientAssertionKeyFile: path }, log);
    expect(c.credential).toEqual({ clientId: 'app', clientSecret: '' });
    const t = target();
    cleanups.push(c.watch(t));
    const told = t.next();
    d.write('key.pem', pem());
    await told;
    expect(t.calls).toEqual([{ refreshNow: 'assertion key changed' }]);
    expect(log.text()).not.toContain('PRIVATE KEY');
  });

  it('keeps the current key and asks for nothing when the new key file cannot be used', async () => {
    const d = dir();
    const path = d.write('key.pem', pem());
    const log = new FakeLog();
    const c = credential({ tokenAuthMethod: 'private_key_jwt', clientId: 'app', clientAssertionKeyFile: path }, log);
    const t = target();
    cleanups.push(c.watch(t));
    d.write('key.pem', 'not a key');
    const deadline = Date.now() + 5_000;
    while (!log.lines.some((l) => l.msg.includes('cannot be used')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(log.at('warn')[0]).toMatchObject({ obj: { path, reason: 'does not hold a PEM private key' } });
    expect(t.calls).toEqual([]);
  });

  it('asks for a token at once when the client assertion file is rotated', async () => {
    const d = dir();
    const path = d.write('token', jwt(2_000_000_000));
    const c = credential({
      tokenAuthMethod: 'client_assertion_file',
      clientId: 'app',
      clientAssertionFile: path,
      clientAssertionType: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    });
    expect(c.credential).toEqual({ clientId: 'app', clientSecret: '' });
    expect(c.describe(1_999_999_400_000)).toEqual([
      `client assertion in ${path}: issuer https://cluster, subject app, audience idp, 600 s left (expires 2033-05-18T03:33:20.000Z)`,
    ]);
    const t = target();
    cleanups.push(c.watch(t));
    const told = t.next();
    d.write('token', jwt(2_000_000_600));
    await told;
    expect(t.calls).toEqual([{ refreshNow: 'client assertion file changed' }]);
  });
});
