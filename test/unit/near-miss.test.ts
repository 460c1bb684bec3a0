import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config/config.js';
import { editDistance, nearestSetting, nearMissVariables, nearMissWarning } from '../../src/config/near-miss.js';

const ENV_NAMES = SETTINGS.map((s) => s.env);

/** Variables a container or a shell commonly holds: none of them is a slip of a setting. */
const UNRELATED = [
  'PATH',
  'HOME',
  'HOSTNAME',
  'PWD',
  'OLDPWD',
  'SHLVL',
  'TERM',
  'LANG',
  'LC_ALL',
  'TZ',
  'USER',
  'LOGNAME',
  'SHELL',
  'EDITOR',
  'HOST',
  'PORT',
  'DEBUG',
  'CI',
  'NO_COLOR',
  'FORCE_COLOR',
  'NODE_ENV',
  'NODE_OPTIONS',
  'NODE_VERSION',
  'YARN_VERSION',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'FTP_PROXY',
  'ftp_proxy',
  'ALL_PROXY',
  'all_proxy',
  'KUBERNETES_SERVICE_HOST',
  'KUBERNETES_SERVICE_PORT',
  'KUBERNETES_SERVICE_PORT_HTTPS',
  'KUBERNETES_PORT',
  'KUBERNETES_PORT_443_TCP',
  'KUBERNETES_PORT_443_TCP_ADDR',
  'KUBERNETES_PORT_443_TCP_PORT',
  'KUBERNETES_PORT_443_TCP_PROTO',
  'TICKET_AUTH_PROXY_SERVICE_HOST',
  'TICKET_AUTH_PROXY_PORT_8181_TCP',
  'POD_NAME',
  'POD_NAMESPACE',
  'INIT_CWD',
  'npm_config_proxy',
  'npm_config_https_proxy',
  'npm_package_name',
  'npm_lifecycle_event',
  'npm_config_listen_port',
];

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions, and a swap of neighbours as one edit', () => {
    expect(editDistance('LISTEN_PORT', 'LISTEN_PORT')).toBe(0);
    expect(editDistance('LISTEN_PROT', 'LISTEN_PORT')).toBe(1);
    expect(editDistance('LISTEN_POT', 'LISTEN_PORT')).toBe(1);
    expect(editDistance('LISTEN_PORTS', 'LISTEN_PORT')).toBe(1);
    expect(editDistance('LISTEN_PART', 'LISTEN_PORT')).toBe(1);
    expect(editDistance('', 'ABC')).toBe(3);
    expect(editDistance('FTP_PROXY', 'HTTP_PROXY')).toBe(2);
  });

  it('with a limit, gives the distance up to the limit and the limit plus one beyond it, call after call', () => {
    // In sequences, since the rows are kept from one call to the next.
    const letters = fc.string({ unit: fc.constantFrom('A', 'B', 'C', '_'), maxLength: 14 });
    const calls = fc.array(fc.tuple(letters, letters, fc.integer({ min: 0, max: 4 })), { maxLength: 6 });
    fc.assert(
      fc.property(calls, (sequence) => {
        for (const [a, b, limit] of sequence) expect(editDistance(a, b, limit)).toBe(Math.min(editDistance(a, b), limit + 1));
      }),
      { numRuns: 3000 },
    );
    expect(editDistance('KUBERNETES_SERVICE_PORT_HTTPS', 'LISTEN_PORT', 2)).toBe(3);
    expect(editDistance('X'.repeat(100), 'X'.repeat(99), 1)).toBe(1);
  });

  it('is symmetric and zero only for equal strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (a, b) => {
        expect(editDistance(a, b)).toBe(editDistance(b, a));
        expect(editDistance(a, b) === 0).toBe(a === b);
      }),
    );
  });
});

describe('nearestSetting', () => {
  it.each([
    ['LISTEN_PROT', 'LISTEN_PORT'],
    ['PORT_LISTEN', 'LISTEN_PORT'],
    ['listen_port', 'LISTEN_PORT'],
    ['listenPort', 'LISTEN_PORT'],
    ['CLIENT_SECERT_FILE', 'CLIENT_SECRET_FILE'],
    ['CLIENT_SECERT', 'CLIENT_SECRET'],
    ['FILE_CLIENT_SECRET', 'CLIENT_SECRET_FILE'],
    ['TOKEN_SCOPES', 'TOKEN_SCOPE'],
    ['LOGLEVEL', 'LOG_LEVEL'],
    ['SHUTDOWN_TIMEOUT', 'SHUTDOWN_TIMEOUT_S'],
    ['baseURL', 'BASE_URL'],
  ])('takes %s for %s', (name, setting) => {
    expect(nearestSetting(name)?.env).toBe(setting);
  });

  it.each(UNRELATED)('leaves %s alone', (name) => {
    expect(nearMissVariables({ [name]: 'x' })).toEqual([]);
  });

  it('takes every swap of two neighbouring letters in a setting for that setting', () => {
    for (const env of ENV_NAMES) {
      for (let i = 0; i + 1 < env.length; i++) {
        const name = env.slice(0, i) + env[i + 1] + env[i] + env.slice(i + 2);
        if (name !== env) expect(nearestSetting(name)?.env, name).toBe(env);
      }
    }
  });

  it("takes any reordering of a setting's words for that setting", () => {
    const reordered = fc
      .constantFrom(...ENV_NAMES.filter((e) => e.includes('_')))
      .chain((env) =>
        fc.shuffledSubarray(env.split('_'), { minLength: env.split('_').length }).map((words) => ({ env, name: words.join('_') })),
      );
    fc.assert(
      fc.property(reordered, ({ env, name }) => {
        expect(nearestSetting(name)?.env).toBe(env);
      }),
    );
  });
});

describe('nearMissVariables', () => {
  it('warns for the slips only, never for the settings themselves or their lower-case proxy forms', () => {
    const env = Object.fromEntries([...ENV_NAMES, 'https_proxy', 'http_proxy', 'no_proxy', ...UNRELATED].map((n) => [n, 'x']));
    expect(nearMissVariables({ ...env, LISTEN_PROT: '9180', CLIENT_SECERT_FILE: '/run/s' })).toEqual([
      { variable: 'CLIENT_SECERT_FILE', setting: 'CLIENT_SECRET_FILE' },
      { variable: 'LISTEN_PROT', setting: 'LISTEN_PORT' },
    ]);
  });

  it('names the variable and the setting, never the value', () => {
    const [miss] = nearMissVariables({ CLIENT_SECERT: 'hunter2-value' });
    expect(nearMissWarning(miss!)).toBe('CLIENT_SECERT is not a setting and is ignored; did you mean CLIENT_SECRET?');
  });
});
