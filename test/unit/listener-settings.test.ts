import { describe, expect, it } from 'vitest';
import { SOCKET_PATH_MAX_BYTES } from '../../src/app/listeners/unix-socket.js';
import { ConfigError } from '../../src/core/errors.js';
import { filesOf, loadSettings } from '../helpers/load-settings.js';

const FILE = '/etc/ticket-auth-proxy.yaml';
const BASE = { BASE_URL: 'https://gw.example.com', CLIENT_ID: 'app', CLIENT_SECRET: 'secret-value' };

function load(env: Record<string, string>, file?: Record<string, unknown>) {
  return loadSettings({ env: { ...BASE, ...env }, file: file && { path: FILE, values: file }, readFile: filesOf({}) }).config;
}

function problems(env: Record<string, string>, file?: Record<string, unknown>): readonly string[] {
  try {
    load(env, file);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError, the configuration loaded');
}

describe('LISTEN_SOCKET_MODE', () => {
  it.each([
    ['0660', '0660'],
    ['660', '0660'],
    ['0o600', '0600'],
    [' 0640 ', '0640'],
    ['0777', '0777'],
    ['0200', '0200'],
  ])('reads %j as the mode %s', (given, mode) => {
    expect(load({ LISTEN_SOCKET: '/run/tap/proxy.sock', LISTEN_SOCKET_MODE: given }).listenSocketMode).toBe(mode);
  });

  it.each(['0800', '1777', '07777', 'rw-rw----', '0x1b0'])('refuses %j as no octal mode up to 0777', (given) => {
    expect(problems({ LISTEN_SOCKET: '/run/tap/proxy.sock', LISTEN_SOCKET_MODE: given })).toEqual([
      `LISTEN_SOCKET_MODE must be an octal file mode from 0000 to 0777, such as 0660 (got ${JSON.stringify(given)})`,
    ]);
  });

  it('refuses a YAML number, which has lost its leading zero, asking for quotes', () => {
    expect(problems({}, { listenSocket: '/run/tap/proxy.sock', listenSocketMode: 660 })).toEqual([
      `listenSocketMode in ${FILE} (LISTEN_SOCKET_MODE) must be an octal file mode in quotes, such as "0660" ` +
        '(YAML reads 0660 as a decimal number) (got 660)',
    ]);
    expect(load({}, { listenSocket: '/run/tap/proxy.sock', listenSocketMode: '0600' }).listenSocketMode).toBe('0600');
  });

  it('refuses a mode that lets no one connect', () => {
    expect(problems({ LISTEN_SOCKET: '/run/tap/proxy.sock', LISTEN_SOCKET_MODE: '0444' })).toEqual([
      'LISTEN_SOCKET_MODE 0444 lets no one connect: connecting to a socket takes write permission on its file; ' +
        'use 0660 (the proxy and its group) or 0600 (the proxy alone)',
    ]);
  });

  it('refuses a mode without a socket', () => {
    expect(problems({ LISTEN_SOCKET_MODE: '0600' })).toEqual([
      "LISTEN_SOCKET_MODE is set without LISTEN_SOCKET: the mode is the socket file's; set LISTEN_SOCKET or remove it",
    ]);
  });
});

describe('LISTEN_SOCKET', () => {
  it('replaces the TCP address, with the mode 0660 by default', () => {
    expect(load({ LISTEN_SOCKET: '/run/tap/proxy.sock' })).toMatchObject({ listenSocket: '/run/tap/proxy.sock', listenSocketMode: '0660' });
  });

  it('is refused beside LISTEN_HOST or LISTEN_PORT, naming both and where each came from', () => {
    expect(problems({ LISTEN_SOCKET: '/run/tap/proxy.sock' }, { listenPort: 8180 })).toEqual([
      `LISTEN_SOCKET and LISTEN_PORT are both set (LISTEN_SOCKET from the environment, LISTEN_PORT from listenPort in ${FILE}): ` +
        `the proxy listener is a Unix socket (LISTEN_SOCKET) or a TCP address (LISTEN_HOST, LISTEN_PORT), not both; ` +
        `remove listenPort in ${FILE} (LISTEN_PORT)`,
    ]);
    expect(problems({ LISTEN_SOCKET: '/run/tap/proxy.sock', LISTEN_HOST: '127.0.0.1', LISTEN_PORT: '1' })).toHaveLength(2);
  });

  it(`takes a path of up to ${SOCKET_PATH_MAX_BYTES} bytes, and refuses a longer one with the limit`, () => {
    const dir = `/run/${'d'.repeat(40)}`;
    const longest = `${dir}/${'s'.repeat(SOCKET_PATH_MAX_BYTES - dir.length - 1)}`;
    expect(load({ LISTEN_SOCKET: longest }).listenSocket).toBe(longest);
    expect(problems({ LISTEN_SOCKET: `${longest}s` })).toEqual([
      `LISTEN_SOCKET is ${SOCKET_PATH_MAX_BYTES + 1} bytes long: a Unix socket path holds at most ${SOCKET_PATH_MAX_BYTES} bytes here; ` +
        'choose a shorter path',
    ]);
    // Counted in bytes: a two-byte character counts twice.
    expect(problems({ LISTEN_SOCKET: `${dir}/${'é'.repeat(40)}` })[0]).toMatch(/^LISTEN_SOCKET is 126 bytes long/);
  });

  it('refuses a directory too long to make the socket in a private directory inside it first', () => {
    const dir = `/${'d'.repeat(SOCKET_PATH_MAX_BYTES - 8)}`;
    expect(problems({ LISTEN_SOCKET: `${dir}/s` })).toEqual([
      `LISTEN_SOCKET's directory is too long: the socket is made in a private directory inside it first (${dir.length + 10} bytes ` +
        `in all), and a Unix socket path holds at most ${SOCKET_PATH_MAX_BYTES} bytes here; choose a shorter directory`,
    ]);
  });

  it('refuses a path naming a directory', () => {
    expect(problems({ LISTEN_SOCKET: '/run/tap/' })).toEqual([
      'LISTEN_SOCKET names a directory (/run/tap/): it names the socket file itself, e.g. /run/tap/proxy.sock',
    ]);
  });

  it.each(['proxy.sock', './run/proxy.sock', '../proxy.sock'])(
    'refuses the relative path %j, as the chart does, naming the setting',
    (path) => {
      expect(problems({ LISTEN_SOCKET: path })).toEqual([
        `LISTEN_SOCKET must be an absolute path, such as /run/ticket-auth-proxy/proxy.sock (got ${JSON.stringify(path)}): ` +
          'a relative one depends on the directory the proxy is started in',
      ]);
      expect(problems({}, { listenSocket: path })[0]).toMatch(
        new RegExp(`^listenSocket in ${FILE} \\(LISTEN_SOCKET\\) must be an absolute path`),
      );
    },
  );

  it('refuses a NUL byte: an abstract socket has no file mode', () => {
    expect(problems({}, { listenSocket: '\0tap' })[0]).toMatch(/^listenSocket in .* must be a file path \(got a NUL byte/);
  });
});

describe('one port for both listeners', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['127.0.0.1', '0.0.0.0'],
    ['0.0.0.0', '10.0.0.5'],
    ['::1', '::'],
    ['127.0.0.1', '::'],
    ['::', '::'],
    // A host name may resolve to either.
    ['localhost', '127.0.0.1'],
    ['0.0.0.0', 'localhost'],
  ])('refuses LISTEN_HOST %s and ADMIN_HOST %s on one port, whose addresses overlap', (listenHost, adminHost) => {
    expect(problems({ LISTEN_HOST: listenHost, LISTEN_PORT: '9000', ADMIN_HOST: adminHost, ADMIN_PORT: '9000' })).toEqual([
      `LISTEN_PORT and ADMIN_PORT are both 9000 on addresses that overlap (LISTEN_HOST ${listenHost}, ADMIN_HOST ${adminHost}): ` +
        'the two listeners cannot share a port; give ADMIN_PORT another',
    ]);
  });

  it.each([
    ['127.0.0.1', '10.0.0.5'],
    ['::1', '0.0.0.0'],
    ['0.0.0.0', '::1'],
  ])('accepts LISTEN_HOST %s and ADMIN_HOST %s on one port: apart, each listens', (listenHost, adminHost) => {
    expect(load({ LISTEN_HOST: listenHost, LISTEN_PORT: '9000', ADMIN_HOST: adminHost, ADMIN_PORT: '9000' }).adminPort).toBe(9000);
  });

  it('accepts port 0 for both: each is given one of its own', () => {
    expect(load({ LISTEN_PORT: '0', ADMIN_PORT: '0' }).listenPort).toBe(0);
  });
});
