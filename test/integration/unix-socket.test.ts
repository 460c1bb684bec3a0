/**
 * The proxy listener on a Unix-domain socket (`LISTEN_SOCKET`), through the real process and
 * real clients: curl `--unix-socket`, Node's http with `socketPath`, Python's http.client over a
 * connected AF_UNIX socket, and raw bytes. The file's mode, what may be at its path when the proxy
 * starts, its removal at shutdown, and every forwarding behaviour of the TCP listener. The socket's
 * directory on a mount of its own under a read-only root, as in a pod (a mount namespace of the
 * proxy's own, `unshare -m`), and a file put at the path while the proxy replaces a stale socket.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { rawUntilClose, run, statuses } from '../helpers/clients.js';
import { freePort, MAIN, pollUntil, rawBody, rawRequest, runCli } from '../helpers/index.js';
import { sharedStack, test } from '../helpers/stack.js';
import { inCi, lacks, skipNote } from '../helpers/tools.js';

const dir = mkdtempSync(join(tmpdir(), 'tap-sock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let made = 0;
/** A fresh socket path in a directory of its own (so a leftover would show in its listing). */
function socketPath(): string {
  const own = join(dir, String(made++));
  mkdirSync(own);
  return join(own, 'proxy.sock');
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  continued: boolean;
}

/** One request with Node's http client over the socket at `path`. */
function viaSocket(path: string, target: string, options: { method?: string; headers?: Record<string, string>; body?: Buffer } = {}) {
  return new Promise<Answer>((resolve, reject) => {
    let continued = false;
    const req = httpRequest({ socketPath: path, path: target, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, continued }));
    });
    req.on('error', reject);
    if (options.headers?.expect === '100-continue') {
      req.on('continue', () => {
        continued = true;
        req.end(options.body);
      });
    } else req.end(options.body);
  });
}

/** Resolves true when a connection to the socket at `path` is accepted. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.on('connect', () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });
}

/** A server of the test's own on the socket at `path`: another process's socket. */
async function otherListener(path: string): Promise<Server> {
  const server = createServer((s) => s.end());
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return server;
}

const SECRET = 'socket-secret-3f9c';
const mode = (path: string): string => (lstatSync(path).mode & 0o777).toString(8).padStart(4, '0');

const shared = socketPath();
const it = sharedStack({ mock: { tokenTtlS: 600 }, env: { LISTEN_SOCKET: shared, ACCESS_LOG: 'true' } });

describe('the proxy listener on a Unix socket', () => {
  it.skipIf(lacks('curl'))(
    `serves curl --unix-socket with the configured token${skipNote('curl')}`,
    async ({ shared: { gateway, clientId } }) => {
      const before = gateway.apiRequests.length;
      const out = await run('curl', ['-s', '-w', '\\n%{http_code}', '--unix-socket', shared, 'http://localhost/api/v1/tickets']);
      const [body, status] = out.split('\n');
      expect(status).toBe('200');
      expect(JSON.parse(body!)).toMatchObject({ workspace: clientId });
      expect(gateway.apiRequests.slice(before).map((r) => r.headers.authorization)).toEqual([expect.stringMatching(/^Bearer /)]);
    },
  );

  it("serves Node's http client given a socketPath", async ({ shared: { proxy, clientId } }) => {
    expect(proxy.proxySocket).toBe(shared);
    const answer = await viaSocket(shared, '/api/v1/tickets');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ workspace: clientId });
  });

  it.skipIf(lacks('python3'))(
    `serves Python's http.client over a connected AF_UNIX socket, two requests on one connection${skipNote('python3')}`,
    async ({ shared: { gateway, clientId } }) => {
      const script = [
        'import http.client, json, socket, sys',
        'class UnixConnection(http.client.HTTPConnection):',
        '    def __init__(self, path):',
        '        super().__init__("localhost")',
        '        self.unix_path = path',
        '    def connect(self):',
        '        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)',
        '        self.sock.connect(self.unix_path)',
        'c = UnixConnection(sys.argv[1])',
        'out = []',
        'for _ in range(2):',
        '    c.request("GET", "/api/v1/tickets")',
        '    r = c.getresponse()',
        '    out.append([r.status, json.loads(r.read())["workspace"], r.getheader("ETag")])',
        'print(json.dumps(out))',
      ].join('\n');
      const connectionsBefore = gateway.apiRequests.length;
      const out = JSON.parse(await run('python3', ['-c', script, shared])) as unknown[];
      expect(out).toEqual([
        [200, clientId, '"tickets-v1"'],
        [200, clientId, '"tickets-v1"'],
      ]);
      expect(gateway.apiRequests.length - connectionsBefore).toBe(2);
    },
  );

  it.skipIf(lacks('javac'))(
    `serves Java through the UnixDomainSocketFactory of examples/java, two requests on one connection${skipNote('javac')}`,
    async ({ shared: { clientId } }) => {
      const classes = join(dir, 'java');
      const root = resolve(import.meta.dirname, '../..');
      await run('javac', [
        '-d',
        classes,
        join(root, 'examples/java/UnixDomainSocketFactory.java'),
        join(root, 'test/integration/java/UnixSocketClient.java'),
      ]);
      const out = await run('java', ['-XX:TieredStopAtLevel=1', '-cp', classes, 'UnixSocketClient', shared]);
      const lines = out.trim().split('\n');
      expect(lines.slice(0, 2).map((l) => l.split(' ', 1)[0])).toEqual(['200', '200']);
      for (const line of lines.slice(0, 2)) expect(JSON.parse(line.slice(4))).toMatchObject({ workspace: clientId });
      expect(lines[2]).toBe('closed-before-close false');
    },
    30_000,
  );

  it.skipIf(lacks('nginx'))(
    `serves nginx's proxy_pass http://unix:, whose callers follow a rewritten Location back through it${skipNote('nginx')}`,
    async ({ shared: { gateway, clientId } }) => {
      const prefix = join(dir, 'nginx');
      mkdirSync(join(prefix, 'tmp'), { recursive: true });
      const port = await freePort();
      const conf = [
        'daemon off;',
        'master_process off;',
        'pid nginx.pid;',
        'error_log error.log;',
        'events { worker_connections 64; }',
        'http {',
        '  access_log off;',
        '  client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp; uwsgi_temp_path tmp; scgi_temp_path tmp;',
        `  server { listen 127.0.0.1:${port}; location /api/v1/ { proxy_pass http://unix:${shared}:; } }`,
        '}',
      ].join('\n');
      writeFileSync(join(prefix, 'nginx.conf'), conf);
      const nginx = spawn('nginx', ['-p', prefix, '-e', 'error.log', '-c', 'nginx.conf'], { stdio: 'ignore' });
      try {
        await pollUntil(async () => (await fetch(`http://127.0.0.1:${port}/api/v1/tickets`)).status === 200, { timeoutMs: 10_000 });
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/tickets`);
        expect(await res.json()).toMatchObject({ workspace: clientId });
        const redirected = await fetch(
          `http://127.0.0.1:${port}/api/v1/redirect?to=${encodeURIComponent(`${gateway.url}/api/v1/tickets`)}`,
        );
        expect(redirected.url).toBe(`http://127.0.0.1:${port}/api/v1/tickets`);
        expect(redirected.status).toBe(200);
      } finally {
        nginx.kill('SIGTERM');
        await new Promise((r) => nginx.once('exit', r));
      }
    },
    30_000,
  );

  it('refuses what it refuses on TCP, each with its problem', async () => {
    const cases: [string, number, string][] = [
      ['GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n', 404, 'not_proxied'],
      ['GET /api/v1/oauth2/token HTTP/1.1\r\nHost: x\r\n\r\n', 404, 'not_proxied'],
      ['GET /api/v1/%2e%2e/x HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'bad_path'],
      ['TRACE /api/v1/tickets HTTP/1.1\r\nHost: x\r\n\r\n', 405, 'method_not_allowed'],
      ['CONNECT gw.example:443 HTTP/1.1\r\nHost: gw.example:443\r\n\r\n', 405, 'method_not_allowed'],
      ['GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n', 501, 'upgrade_not_supported'],
      [`GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
      ['GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'bad_request'],
    ];
    for (const [raw, status, code] of cases) {
      const res = await rawRequest(shared, raw);
      expect(statuses(res), raw.split('\r\n')[0]).toEqual([status]);
      expect(JSON.parse(rawBody(res))).toMatchObject({ status, code });
    }
  });

  it('answers a pipeline in order, and forwards nothing pipelined after Connection: close', async ({ shared: { gateway } }) => {
    const one = 'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\n\r\n';
    expect(
      statuses(await rawUntilClose(shared, `${one}${one}GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)),
    ).toEqual([200, 200, 200]);
    const before = gateway.apiRequests.length;
    const closed = await rawUntilClose(
      shared,
      'GET /api/v1/tickets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /api/v1/tickets?pipelined HTTP/1.1\r\nHost: x\r\n\r\n',
    );
    expect(statuses(closed)).toEqual([200]);
    expect(gateway.apiRequests.slice(before).map((r) => r.url)).toEqual(['/api/v1/tickets']);
  });

  it('answers Expect: 100-continue and streams the body on', async () => {
    const body = Buffer.alloc(300_000, 7);
    const answer = await viaSocket(shared, '/api/v1/upload', {
      method: 'POST',
      headers: { expect: '100-continue', 'content-type': 'application/octet-stream', 'content-length': String(body.length) },
      body,
    });
    expect(answer.continued).toBe(true);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ length: body.length });
  });

  it('aborts the upstream request when the caller goes away', async ({ shared: { gateway } }) => {
    const before = gateway.apiRequests.length;
    const req = httpRequest({ socketPath: shared, path: '/api/v1/hang' });
    req.on('error', () => {});
    req.end();
    await pollUntil(() => gateway.apiRequests.slice(before).some((r) => r.url === '/api/v1/hang'), { timeoutMs: 5000 });
    req.destroy();
    await pollUntil(() => gateway.apiRequests.slice(before).some((r) => r.url === '/api/v1/hang' && r.aborted), { timeoutMs: 5000 });
  });

  it("rewrites a Location into the gateway to an absolute path, whatever the caller's Host, and leaves others alone", async ({
    shared: { gateway },
  }) => {
    const inside = `/api/v1/redirect?to=${encodeURIComponent(`${gateway.url}/api/v1/tickets?page=2`)}`;
    // curl and requests-unixsocket send Host: localhost, which names no way back to the socket.
    const withHost = await viaSocket(shared, inside, { headers: { host: 'localhost' } });
    expect(withHost.status).toBe(302);
    expect(withHost.headers.location).toBe('/api/v1/tickets?page=2');
    const withoutHost = await rawRequest(shared, `GET ${inside} HTTP/1.0\r\n\r\n`);
    expect(withoutHost).toMatch(/^HTTP\/1\.1 302 /);
    expect(withoutHost).toMatch(/\r\nlocation: \/api\/v1\/tickets\?page=2\r\n/i);
    const outside = await viaSocket(shared, `/api/v1/redirect?to=${encodeURIComponent('https://elsewhere.example/x')}`);
    expect(outside.headers.location).toBe('https://elsewhere.example/x');
  });

  it('writes its access log line as on TCP, with no peer address', async ({ shared: { proxy } }) => {
    await viaSocket(shared, '/api/v1/tickets?q=secret-query');
    const line = await proxy.waitForLog((l) => l.msg === 'request' && l.path === '/api/v1/tickets' && l.status === 200, 5000);
    expect(Object.keys(line).filter((k) => /addr|peer|remote|ip|port/i.test(k))).toEqual([]);
    expect(JSON.stringify(proxy.lines())).not.toContain('secret-query');
  });
});

describe('the socket file', () => {
  // The proxy started under a umask that takes nothing away: a socket bound at its path would be 0777.
  const UMASK_000 = ['sh', '-c', 'umask 000; exec "$0" "$@"'];

  test('has mode 0660 by default, even under umask 000, and leaves nothing else in its directory', async ({ stack }) => {
    const path = socketPath();
    const { proxy } = await stack({ env: { LISTEN_SOCKET: path }, wrap: UMASK_000 });
    expect(lstatSync(path).isSocket()).toBe(true);
    expect(mode(path)).toBe('0660');
    expect(readdirSync(join(path, '..'))).toEqual([basename(path)]);
    expect(proxy.lines().find((l) => l.msg === 'listeners up')?.proxy).toEqual({ socket: path, mode: '0660' });
  });

  test('has the mode LISTEN_SOCKET_MODE gives, and a mode open to every user is warned of', async ({ stack }) => {
    const own = socketPath();
    await stack({ env: { LISTEN_SOCKET: own, LISTEN_SOCKET_MODE: '600' }, wrap: UMASK_000 });
    expect(mode(own)).toBe('0600');
    const open = socketPath();
    const { proxy } = await stack({ env: { LISTEN_SOCKET: open, LISTEN_SOCKET_MODE: '0666' } });
    expect(mode(open)).toBe('0666');
    expect(proxy.lines().find((l) => l.msg?.startsWith('the proxy socket lets every local user connect'))).toMatchObject({
      levelName: 'warn',
      socket: open,
      mode: '0666',
    });
  });

  test('left by a proxy killed with SIGKILL is replaced by the next proxy on the same path', async ({ stack, mock }) => {
    const path = socketPath();
    const gateway = await mock({ clients: { client: SECRET } });
    const first = await stack({ gateway, secret: SECRET, env: { LISTEN_SOCKET: path } });
    expect(await first.proxy.stop('SIGKILL')).toMatchObject({ signal: 'SIGKILL' });
    expect(lstatSync(path).isSocket()).toBe(true);
    expect(await answers(path)).toBe(false);
    const second = await stack({ gateway, secret: SECRET, env: { LISTEN_SOCKET: path } });
    expect(second.proxy.lines().some((l) => l.msg?.startsWith('LISTEN_SOCKET: replaced a socket no process answered on'))).toBe(true);
    expect((await viaSocket(path, '/api/v1/tickets')).status).toBe(200);
    expect(mode(path)).toBe('0660');
  });

  test('is removed at shutdown once the listener closes, while an in-flight request still finishes', async ({ stack }) => {
    const path = socketPath();
    const { proxy, gateway } = await stack({ env: { LISTEN_SOCKET: path, SHUTDOWN_DELAY_S: '1' } });
    const inflight = viaSocket(path, '/api/v1/slow?ms=1500');
    await pollUntil(() => gateway.apiRequests.some((r) => r.url.includes('/slow')), { timeoutMs: 5000 });
    proxy.child.kill('SIGTERM');
    await proxy.waitForLog((l) => l.msg?.startsWith('shutdown started') === true, 5000);
    // Still serving through the delay, on the same file.
    expect((await viaSocket(path, '/api/v1/tickets')).status).toBe(200);
    await proxy.waitForLog((l) => l.msg?.startsWith('listeners closed') === true, 5000);
    expect(existsSync(path)).toBe(false);
    expect((await inflight).status).toBe(200);
    expect(await proxy.waitForExit(10_000)).toMatchObject({ code: 0 });
  });

  test("is left in place at shutdown when another process's socket has taken the path", async ({ stack }) => {
    const path = socketPath();
    const { proxy } = await stack({ env: { LISTEN_SOCKET: path } });
    rmSync(path);
    const other = await otherListener(path);
    try {
      expect(await proxy.stop()).toMatchObject({ code: 0 });
      expect(proxy.lines().some((l) => l.msg === 'LISTEN_SOCKET is another file now: left in place')).toBe(true);
      expect(await answers(path)).toBe(true);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});

describe('what LISTEN_SOCKET refuses at start (exit 2, naming it)', () => {
  /** Runs the proxy on `path` against `gateway` to its refusal. */
  const refusal = (gateway: string, env: Record<string, string>) =>
    runCli([], { BASE_URL: gateway, CLIENT_ID: 'c', CLIENT_SECRET: 's', ADMIN_PORT: '0', ...env });

  test('a regular file, left untouched', async ({ mock }) => {
    const gateway = await mock();
    const path = socketPath();
    writeFileSync(path, 'keep me');
    const out = await refusal(gateway.url, { LISTEN_SOCKET: path });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(`LISTEN_SOCKET ${path} exists and is a regular file, not a socket`);
    expect(readFileSync(path, 'utf8')).toBe('keep me');
    // Refused before the token fetch: the identity provider was not asked.
    expect(gateway.tokenRequests).toEqual([]);
  });

  test('a socket another process answers on, which goes on answering', async ({ mock }) => {
    const gateway = await mock();
    const path = socketPath();
    const other = await otherListener(path);
    try {
      const out = await refusal(gateway.url, { LISTEN_SOCKET: path });
      expect(out.code).toBe(2);
      expect(out.stderr).toContain(`LISTEN_SOCKET ${path} is in use: another process answers on it`);
      expect(await answers(path)).toBe(true);
      expect(gateway.tokenRequests).toEqual([]);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  test.for([
    ['a directory', (path: string) => mkdirSync(path), 'is a directory: LISTEN_SOCKET names the socket file itself'],
    ['a symbolic link', (path: string) => symlinkSync(join(dir, 'elsewhere.sock'), path), 'is a symbolic link'],
    ['a path in a directory that does not exist', (path: string) => rmSync(join(path, '..'), { recursive: true }), 'does not exist'],
  ] as const)('%s', async ([, prepare, message]) => {
    const path = socketPath();
    prepare(path);
    const out = await refusal('http://127.0.0.1:9', { LISTEN_SOCKET: path });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(`LISTEN_SOCKET ${path} `);
    expect(out.stderr).toContain(message);
  });

  test('a path longer than a socket address holds, with the limit', async () => {
    const path = join(dir, 'x'.repeat(120));
    const out = await refusal('http://127.0.0.1:9', { LISTEN_SOCKET: path });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(`LISTEN_SOCKET is ${Buffer.byteLength(path)} bytes long: a Unix socket path holds at most 107 bytes here`);
  });

  test('LISTEN_SOCKET beside LISTEN_HOST and LISTEN_PORT, naming each, and a mode without a socket', async () => {
    const both = await refusal('http://127.0.0.1:9', { LISTEN_SOCKET: socketPath(), LISTEN_HOST: '127.0.0.1', LISTEN_PORT: '8180' });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain(
      'LISTEN_SOCKET and LISTEN_HOST are both set (LISTEN_SOCKET from the environment, LISTEN_HOST from the environment)',
    );
    expect(both.stderr).toContain('LISTEN_SOCKET and LISTEN_PORT are both set');
    const modeAlone = await refusal('http://127.0.0.1:9', { LISTEN_SOCKET_MODE: '0600', LISTEN_PORT: '0' });
    expect(modeAlone.code).toBe(2);
    expect(modeAlone.stderr).toContain('LISTEN_SOCKET_MODE is set without LISTEN_SOCKET');
  });
});

/** Leaves a socket no process answers on at `path`, as a proxy killed with SIGKILL does. */
function leaveStaleSocket(path: string): void {
  spawnSync(process.execPath, ['-e', STALE_SOCKET, path]);
  expect(lstatSync(path).isSocket()).toBe(true);
}
const STALE_SOCKET = "require('net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))";

/** Why the proxy cannot be given mounts of its own here (a mount namespace, as root), or undefined. */
function mountNamespaceProblem(): string | undefined {
  if (process.getuid?.() !== 0) return 'a mount namespace of its own (unshare -m) needs root';
  const probe = spawnSync('unshare', ['-m', '--propagation', 'private', 'mount', '-t', 'tmpfs', 'tmpfs', dir], { encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  return `unshare -m cannot mount a tmpfs here (${(probe.stderr || probe.error?.message || `exit ${probe.status}`).trim()})`;
}
const mountsProblem = mountNamespaceProblem();
/** Under CI nothing is skipped: where the namespace cannot be made, the tests run and fail. */
const lacksMounts = !inCi() && mountsProblem !== undefined;
const mountsNote = lacksMounts ? ` [skipped: ${mountsProblem}]` : '';

interface Mounts {
  /** The parent of the socket's directory read-only, as a pod's root filesystem is. */
  readOnlyParent: boolean;
  /** The socket's directory itself read-only. */
  readOnlySocketDir?: boolean;
  /** A stale socket left at `<socketDir>/proxy.sock` before the proxy starts. */
  stale?: boolean;
}

/**
 * The command prefix that starts the proxy in a mount namespace of its own in which `socketDir` is
 * a tmpfs of its own, as a pod's `emptyDir` volume is a mount of its own. The test reaches the
 * files there through `/proc/<pid>/root` ({@link inside}).
 */
function ownMounts(socketDir: string, mounts: Mounts): string[] {
  const script = [
    'set -e',
    mounts.readOnlyParent ? 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"' : ':',
    `mount -t tmpfs -o mode=0755,size=1m${mounts.readOnlySocketDir === true ? ',ro' : ''} tmpfs "$2"`,
    // $3 is node, which the stack appends: it leaves the stale socket as a killed proxy would.
    mounts.stale === true ? `"$3" -e "${STALE_SOCKET}" "$2/proxy.sock" || true` : ':',
    'shift 2',
    'exec "$@"',
  ].join('\n');
  return ['unshare', '-m', '--propagation', 'private', 'sh', '-c', script, 'sh', dirname(socketDir), socketDir];
}

function killIfAlive(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

/** `path` as the process `pid` sees it, in its own mount namespace. */
const inside = (pid: number | undefined, path: string): string => `/proc/${pid}/root${path}`;

describe(`the socket's directory on a mount of its own, as a pod's volume${mountsNote}`, () => {
  test.skipIf(lacksMounts).for([
    ['a read-only parent, as in a pod', true],
    ['a writable parent', false],
  ] as const)('is made and serves, on a tmpfs of its own under %s, leaving nothing else there', async ([, readOnlyParent], { stack }) => {
    const socketDir = join(dir, String(made++), 'run');
    mkdirSync(socketDir, { recursive: true });
    const path = join(socketDir, 'proxy.sock');
    const { proxy, clientId } = await stack({ env: { LISTEN_SOCKET: path }, wrap: ownMounts(socketDir, { readOnlyParent }) });
    const there = inside(proxy.child.pid, path);
    const answer = await viaSocket(there, '/api/v1/tickets');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ workspace: clientId });
    expect(mode(there)).toBe('0660');
    expect(readdirSync(inside(proxy.child.pid, socketDir))).toEqual(['proxy.sock']);
    // Nothing was written beside the socket's directory either.
    expect(readdirSync(inside(proxy.child.pid, dirname(socketDir)))).toEqual([basename(socketDir)]);
  });

  test.skipIf(lacksMounts)('replaces a stale socket there', async ({ stack }) => {
    const socketDir = join(dir, String(made++), 'run');
    mkdirSync(socketDir, { recursive: true });
    const path = join(socketDir, 'proxy.sock');
    const { proxy } = await stack({ env: { LISTEN_SOCKET: path }, wrap: ownMounts(socketDir, { readOnlyParent: true, stale: true }) });
    expect(proxy.lines().some((l) => l.msg?.startsWith('LISTEN_SOCKET: replaced a socket no process answered on'))).toBe(true);
    expect((await viaSocket(inside(proxy.child.pid, path), '/api/v1/tickets')).status).toBe(200);
  });

  test.skipIf(lacksMounts)('refuses a socket directory it cannot write to, naming that directory', async ({ mock }) => {
    const gateway = await mock();
    const socketDir = join(dir, String(made++), 'run');
    mkdirSync(socketDir, { recursive: true });
    const path = join(socketDir, 'proxy.sock');
    const [command, ...prefix] = ownMounts(socketDir, { readOnlyParent: true, readOnlySocketDir: true });
    const out = spawnSync(command!, [...prefix, process.execPath, MAIN], {
      env: { PATH: process.env.PATH, BASE_URL: gateway.url, CLIENT_ID: 'c', CLIENT_SECRET: 's', ADMIN_PORT: '0', LISTEN_SOCKET: path },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(out.status).toBe(2);
    expect(out.stderr).toContain(`LISTEN_SOCKET ${path} cannot be made in ${socketDir} (EROFS; the proxy runs as uid 0)`);
    expect(gateway.tokenRequests).toEqual([]);
  });
});

describe('a file put at the path while a stale socket is replaced', () => {
  test.skipIf(lacks('strace'))(
    `is left in place, and the start refused${skipNote('strace')}`,
    async ({ mock }) => {
      const gateway = await mock();
      const path = socketPath();
      leaveStaleSocket(path);
      // strace stops the proxy (SIGSTOP) once it has bound its socket, its first bind: after it
      // found the stale socket, before it removes it. The test puts its file there meanwhile.
      const trace = join(dirname(path), '..', `${basename(dirname(path))}.strace`);
      const child = spawn(
        'strace',
        ['-f', '-qq', '-o', trace, '-e', 'trace=bind', '-e', 'inject=bind:signal=SIGSTOP:when=1', process.execPath, MAIN],
        {
          env: { PATH: process.env.PATH, BASE_URL: gateway.url, CLIENT_ID: 'c', CLIENT_SECRET: 's', ADMIN_PORT: '0', LISTEN_SOCKET: path },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      let stdout = '';
      child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
      child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
      let code: number | null | undefined;
      const exited = new Promise<void>((resolve) => child.once('exit', (c) => resolve(void (code = c))));
      const traced = (): string => (existsSync(trace) ? readFileSync(trace, 'utf8') : '');
      let proxyPid = 0;
      try {
        // strace writes this line once the proxy has stopped (a group stop, until SIGCONT).
        await pollUntil(() => traced().includes('--- stopped by SIGSTOP ---'), { timeoutMs: 15_000 }).catch((err: Error) => {
          throw new Error(`the proxy did not stop at its bind: ${err.message}; strace:\n${traced()}\nits output:\n${stderr}`);
        });
        proxyPid = Number(/^(\d+)\s+bind\(/m.exec(traced())![1]);
        writeFileSync(`${path}.new`, 'keep me');
        renameSync(`${path}.new`, path);
        process.kill(proxyPid, 'SIGCONT');
        // It refuses and exits, or (the bug) goes on to replace the file and start.
        await pollUntil(() => code !== undefined || stdout.includes('"listeners up"'), { timeoutMs: 15_000 });
        expect(existsSync(path) && lstatSync(path).isFile() ? readFileSync(path, 'utf8') : 'not a regular file any more').toBe('keep me');
        await pollUntil(() => code !== undefined, { timeoutMs: 15_000 });
        expect(code, stderr).toBe(2);
        expect(stderr).toContain(`LISTEN_SOCKET ${path} changed while the proxy was starting`);
        expect(readdirSync(dirname(path))).toEqual([basename(path)]);
        expect(gateway.tokenRequests).toEqual([]);
      } finally {
        child.kill('SIGKILL');
        if (proxyPid > 0) killIfAlive(proxyPid);
        await exited;
      }
    },
    40_000,
  );
});
