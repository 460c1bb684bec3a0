import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import type { StoreSettings } from '../../src/store/settings.js';
import { filesOf, loadSettings } from '../helpers/load-settings.js';

const BASE = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'client-secret' };
const PASSWORD_FILE = '/var/run/secrets/store-password';
const KEY_FILE = '/var/run/secrets/store-key';

function store(
  env: Record<string, string>,
  files: Record<string, string> = {},
  bytes?: Record<string, Uint8Array>,
): StoreSettings | undefined {
  return loadSettings({
    env: { ...BASE, ...env },
    readFile: filesOf(files),
    ...(bytes ? { readBytes: (p: string) => bytes[p] ?? Buffer.from(filesOf(files)(p)) } : {}),
  }).checked.store;
}

function problems(env: Record<string, string>, files: Record<string, string> = {}, bytes?: Record<string, Uint8Array>): string[] {
  try {
    store(env, files, bytes);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error('expected a ConfigError, the configuration loaded');
}

describe('the token store settings', () => {
  it('are nothing without TOKEN_STORE_URL, and the other TOKEN_STORE_ settings are refused alone', () => {
    expect(store({})).toBeUndefined();
    expect(problems({ TOKEN_STORE_PASSWORD_FILE: PASSWORD_FILE, TOKEN_STORE_PREFIX: 'x:' })).toEqual([
      'TOKEN_STORE_PASSWORD_FILE is set without TOKEN_STORE_URL: set TOKEN_STORE_URL to share tokens through a store, or remove it',
      'TOKEN_STORE_PREFIX is set without TOKEN_STORE_URL: set TOKEN_STORE_URL to share tokens through a store, or remove it',
    ]);
  });

  it('read a standalone URL with its user and database, and the password from its file, trimmed', () => {
    const s = store(
      { TOKEN_STORE_URL: 'redis://proxy@cache.internal:6380/2', TOKEN_STORE_PASSWORD_FILE: PASSWORD_FILE },
      { [PASSWORD_FILE]: 'store-pw\n' },
    );
    expect(s).toEqual({
      endpoint: {
        mode: 'standalone',
        tls: false,
        nodes: [{ host: 'cache.internal', port: 6380 }],
        username: 'proxy',
        urlPassword: undefined,
        db: 2,
        shown: 'redis://proxy@cache.internal:6380/2',
      },
      prefix: 'ticket-auth-proxy:',
      timeoutMs: 500,
      scripts: 'eval',
      password: 'store-pw',
      passwordSource: 'TOKEN_STORE_PASSWORD_FILE',
      passwordFileText: 'store-pw\n',
      keyMaterial: undefined,
      passwordFile: PASSWORD_FILE,
      keyFile: undefined,
    });
  });

  it('read rediss: as TLS, the default port, an IPv6 address, and a password in the URL (shown without it)', () => {
    const s = store({ TOKEN_STORE_URL: 'rediss://:p%40ss@[::1]' });
    expect(s?.endpoint).toMatchObject({
      tls: true,
      nodes: [{ host: '::1', port: 6379 }],
      username: undefined,
      db: 0,
      shown: 'rediss://[::1]',
    });
    expect(s).toMatchObject({ password: 'p@ss', passwordSource: 'TOKEN_STORE_URL' });
  });

  it('read a cluster as its seed nodes, each URL in full and alike', () => {
    const s = store(
      {
        TOKEN_STORE_URL: 'rediss://proxy@10.0.0.1:7000, rediss://proxy@10.0.0.2:7001',
        TOKEN_STORE_MODE: 'cluster',
        TOKEN_STORE_PASSWORD_FILE: PASSWORD_FILE,
      },
      { [PASSWORD_FILE]: 'pw' },
    );
    expect(s?.endpoint).toMatchObject({
      mode: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
      ],
      shown: 'rediss://proxy@10.0.0.1:7000,rediss://proxy@10.0.0.2:7001',
    });
  });

  it.each([
    ['http://cache:6379', {}, 'TOKEN_STORE_URL must begin with redis:// or rediss:// (got "http://cache:6379")'],
    ['cache:6379', {}, 'TOKEN_STORE_URL must begin with redis:// or rediss://'],
    ['redis://cache:6379/two', {}, 'TOKEN_STORE_URL may end only in a database number'],
    ['redis://cache:6379?db=2', {}, 'TOKEN_STORE_URL must not have a query or fragment'],
    ['redis://a:6379,redis://b:6379', {}, 'TOKEN_STORE_URL names one server; a list of seed nodes needs TOKEN_STORE_MODE=cluster'],
    ['redis://a:6379/1', { TOKEN_STORE_MODE: 'cluster' }, 'a cluster has only database 0'],
    [
      'redis://u1@a:6379,redis://u2@b:6379',
      { TOKEN_STORE_MODE: 'cluster', TOKEN_STORE_PASSWORD_FILE: PASSWORD_FILE },
      'different schemes, users or passwords',
    ],
    ['redis://proxy@cache:6379', {}, 'TOKEN_STORE_URL names the user "proxy" without a password: set TOKEN_STORE_PASSWORD_FILE'],
  ])('refuse %s, naming TOKEN_STORE_URL', (url, env, problem) => {
    expect(problems({ TOKEN_STORE_URL: url, ...env }, { [PASSWORD_FILE]: 'pw' }).join('\n')).toContain(problem);
  });

  it('never show a password written in the URL, whatever is wrong with it', () => {
    const all = [
      ...problems({ TOKEN_STORE_URL: 'http://u:hunter2-secret@cache:6379' }),
      ...problems({ TOKEN_STORE_URL: 'redis://u:hunter2-secret@cache:6379/x' }),
      ...problems(
        { TOKEN_STORE_URL: 'redis://u:hunter2-secret@cache:6379', TOKEN_STORE_PASSWORD_FILE: PASSWORD_FILE },
        { [PASSWORD_FILE]: 'pw' },
      ),
      ...problems({ TOKEN_STORE_URL: '   ' }),
    ].join('\n');
    expect(all).toContain(
      'TOKEN_STORE_URL holds a password and TOKEN_STORE_PASSWORD_FILE is set: keep the password in the file alone and leave it out of the URL (a user name stays, before the "@")',
    );
    expect(all).not.toContain('hunter2');
  });

  it.each([
    ['a "/"', 'redis://u:s3cr/et@127.0.0.1:26390', {}, '"/" as %2F', '"redis://***@127.0.0.1:26390"'],
    [
      'a "/" after digits, which would read as a port and a path',
      'redis://u:123/et@cache:6379',
      {},
      '"/" as %2F',
      '"redis://***@cache:6379"',
    ],
    ['a "?" and a "#"', 'rediss://u:a?b#c@cache', {}, '"?" as %3F, "#" as %23', '"rediss://***@cache"'],
    ['a "%" that encodes nothing', 'redis://u:50%off@cache', {}, '"%" as %25', '"redis://***@cache"'],
    [
      'a "," in cluster mode (where it separates the seed nodes)',
      'redis://app:RPW1a,b@10.0.0.1:6379,redis://app:RPW1a,b@10.0.0.2:6379',
      { TOKEN_STORE_MODE: 'cluster' },
      '"," as %2C',
      '"redis://***@10.0.0.2:6379"',
    ],
  ])('refuse a password with %s, naming the character and how to write it, never the password', (_what, url, env, how, shown) => {
    const all = problems({ TOKEN_STORE_URL: url, ...env });
    expect(all).toHaveLength(1);
    expect(all[0]).toMatch(/^TOKEN_STORE_URL has an unencoded "[^"]+"( and "[^"]+")* in its user information, before the "@" \(got "/);
    expect(all[0]).toContain(`(${how})`);
    expect(all[0]).toContain(`(got ${shown})`);
    expect(all[0]).toContain('or keep the password in TOKEN_STORE_PASSWORD_FILE and leave it out of the URL');
    for (const piece of ['s3cr', 'et@', '123', 'a?b', 'b#c', 'off', 'RPW1a', 'u:', 'app:']) expect(all[0]).not.toContain(piece);
  });

  it('take a password that holds an "@" or, with one server, a ","; refuse two servers without cluster', () => {
    expect(store({ TOKEN_STORE_URL: 'redis://u:p@ss@cache:6379' })).toMatchObject({
      password: 'p@ss',
      endpoint: { shown: 'redis://u@cache:6379' },
    });
    expect(store({ TOKEN_STORE_URL: 'redis://u:a,b@cache:6379' })).toMatchObject({
      password: 'a,b',
      endpoint: { nodes: [{ host: 'cache' }] },
    });
    for (const url of ['redis://a:6379,redis://b:6379', 'redis://u:pw@a:6379,b:6379']) {
      expect(problems({ TOKEN_STORE_URL: url })).toEqual([
        'TOKEN_STORE_URL names one server; a list of seed nodes needs TOKEN_STORE_MODE=cluster',
      ]);
    }
  });

  it('show a malformed URL without its user information, and an example without one', () => {
    expect(problems({ TOKEN_STORE_URL: 'redis://u:pw@cache:port' })).toEqual([
      'TOKEN_STORE_URL must be a URL such as redis://redis.example.com:6379 or rediss://... for TLS (got "redis://***@cache:port")',
    ]);
  });

  it('refuse a password file that cannot be read or is empty, naming it', () => {
    expect(problems({ TOKEN_STORE_URL: 'redis://cache', TOKEN_STORE_PASSWORD_FILE: PASSWORD_FILE })).toEqual([
      `TOKEN_STORE_PASSWORD_FILE names a file that cannot be read (ENOENT): ${PASSWORD_FILE}`,
    ]);
    expect(problems({ TOKEN_STORE_URL: 'redis://cache', TOKEN_STORE_PASSWORD_FILE: PASSWORD_FILE }, { [PASSWORD_FILE]: ' \n' })).toEqual([
      `TOKEN_STORE_PASSWORD_FILE names an empty file: ${PASSWORD_FILE}`,
    ]);
  });

  it('take the key file as its bytes, binary and untrimmed, and refuse fewer than 32', () => {
    const key = Buffer.from([0xff, 0xfe, 0x00, 0x80, ...Array.from({ length: 28 }, (_, i) => i)]);
    expect(store({ TOKEN_STORE_URL: 'redis://cache', TOKEN_STORE_KEY_FILE: KEY_FILE }, {}, { [KEY_FILE]: key })?.keyMaterial).toEqual(key);
    expect(problems({ TOKEN_STORE_URL: 'redis://cache', TOKEN_STORE_KEY_FILE: KEY_FILE }, {}, { [KEY_FILE]: key.subarray(0, 31) })).toEqual(
      [`TOKEN_STORE_KEY_FILE holds 31 bytes; the store key needs at least 32 (make one with: head -c 32 /dev/urandom > FILE): ${KEY_FILE}`],
    );
  });

  it('refuse a prefix that would change the ACL pattern or the hash tag', () => {
    for (const prefix of ['tap*', 'tap{x}:', 'a b', 'x?']) {
      expect(problems({ TOKEN_STORE_URL: 'redis://cache', TOKEN_STORE_PREFIX: prefix })[0]).toMatch(
        /^TOKEN_STORE_PREFIX may hold only letters/,
      );
    }
    expect(store({ TOKEN_STORE_URL: 'redis://cache', TOKEN_STORE_PREFIX: 'team-a/tap:' })?.prefix).toBe('team-a/tap:');
  });

  it('report every problem together', () => {
    expect(
      problems({
        TOKEN_STORE_URL: 'redis://proxy@cache/x',
        TOKEN_STORE_PREFIX: 'a*',
        TOKEN_STORE_TIMEOUT_MS: '0',
        TOKEN_STORE_KEY_FILE: KEY_FILE,
      }),
    ).toHaveLength(4);
  });
});
