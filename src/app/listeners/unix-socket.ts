import { constants, type Stats } from 'node:fs';
import { access, chmod, link, lstat, mkdtemp, rm, stat, unlink } from 'node:fs/promises';
import { connect, type Server } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';
import { ConfigError } from '../../core/errors.js';
import type { Log } from '../../core/log.js';

/**
 * The longest path a Unix-domain socket can be bound to: `sun_path` holds 108 bytes on Linux (104
 * on macOS and the BSDs), its terminating NUL included.
 */
export const SOCKET_PATH_MAX_BYTES = (process.platform === 'linux' ? 108 : 104) - 1;

/**
 * The socket is first bound in a private directory made inside its own directory (`mkdtemp`, mode
 * 0700): `<dir>/.XXXXXX/s`, this many bytes longer than the directory's own path.
 */
const PRIVATE_PATH_EXTRA_BYTES = '/.XXXXXX/s'.length;

/** Why `path` cannot be a socket's path, or undefined: a message naming `name`. */
export function socketPathProblem(path: string, name: string): string | undefined {
  if (path.includes('\0')) return `${name} must be a file path (got a NUL byte: an abstract socket has no file mode to limit who connects)`;
  if (!isAbsolute(path)) {
    return (
      `${name} must be an absolute path, such as /run/ticket-auth-proxy/proxy.sock (got ${JSON.stringify(path)}): ` +
      'a relative one depends on the directory the proxy is started in'
    );
  }
  if (path.endsWith('/')) return `${name} names a directory (${path}): it names the socket file itself, e.g. ${path}proxy.sock`;
  const bytes = Buffer.byteLength(path);
  const max = SOCKET_PATH_MAX_BYTES;
  if (bytes > max) return `${name} is ${bytes} bytes long: a Unix socket path holds at most ${max} bytes here; choose a shorter path`;
  const privateBytes = Buffer.byteLength(dirname(path)) + PRIVATE_PATH_EXTRA_BYTES;
  if (privateBytes > max) {
    return (
      `${name}'s directory is too long: the socket is made in a private directory inside it first ` +
      `(${privateBytes} bytes in all), and a Unix socket path holds at most ${max} bytes here; choose a shorter directory`
    );
  }
  return undefined;
}

/** The proxy listener's socket file, as {@link listenOnSocket} made it. */
export interface SocketFile {
  readonly path: string;
  /** The mode it was given, four octal digits. */
  readonly mode: string;
  /** Whether a killed process's leftover was replaced. */
  readonly replacedStale: boolean;
  /** Removes the file, unless it is no longer the one made here (another process's socket now). */
  remove(): Promise<void>;
}

export interface SocketTarget {
  path: string;
  /** Four octal digits (`LISTEN_SOCKET_MODE`). */
  mode: string;
}

/**
 * Opens `server` on a Unix-domain socket at `target.path` with exactly `target.mode`, never more
 * open for an instant, writing nothing outside the socket's own directory (in a pod the root
 * filesystem is read-only and that directory is a volume of its own, docs/unix-socket.md):
 *
 * 1. {@link claimSocketPath} examines the path and its directory; what it refuses is a
 *    {@link ConfigError} naming `LISTEN_SOCKET`.
 * 2. The socket is bound in a private directory made inside the socket's directory (mode 0700: no
 *    one else can reach it there), under a umask that leaves exactly the mode: the file never has
 *    another, and nothing follows a link to give it one.
 * 3. A stale socket found in step 1 is removed only while it is still that file (same device and
 *    inode), checked right before the unlink: a file put at the path since is refused, not removed.
 * 4. The socket is linked in at the path; `link` never replaces a file, so one that appeared
 *    meanwhile is refused, not overwritten. The private name goes at once.
 *
 * The file is removed by {@link SocketFile.remove}, and only while it is still this one: Node
 * unlinks the path a socket was bound to when the server closes, which here is the private name,
 * so a socket another process has put at the path since is left alone.
 */
export async function listenOnSocket(server: Server, target: SocketTarget, log: Log): Promise<SocketFile> {
  const { path } = target;
  const mode = Number.parseInt(target.mode, 8);
  const stale = await claimSocketPath(path);
  let privateDir: string | undefined;
  try {
    // `<dir>/.XXXXXX`, in the socket's own directory: the same mount as the path it is linked to,
    // and the one directory the proxy may write to. (`join` would drop a bare '.'.)
    privateDir = await mkdtemp(join(dirname(path), '.x').slice(0, -1));
    const privatePath = join(privateDir, 's');
    await bindWithMode(server, privatePath, mode);
    if (stale !== undefined) await removeStale(path, stale);
    await link(privatePath, path);
    await unlink(privatePath);
  } catch (err) {
    if (server.listening) server.close();
    throw err instanceof ConfigError ? err : cannotMake(path, err);
  } finally {
    if (privateDir !== undefined) await rm(privateDir, { recursive: true, force: true });
  }
  const made = await lstat(path);
  if (stale !== undefined)
    log.info({ socket: path }, 'LISTEN_SOCKET: replaced a socket no process answered on (a stopped process left it)');
  return {
    path,
    mode: target.mode,
    replacedStale: stale !== undefined,
    remove: async () => {
      const now = await lstat(path).catch(() => undefined);
      if (now === undefined) return;
      if (!sameFile(now, made)) {
        log.info({ socket: path }, 'LISTEN_SOCKET is another file now: left in place');
        return;
      }
      await unlink(path).catch(ignoreCode('ENOENT'));
    },
  };
}

/**
 * Whether the proxy may take `path`, as the start sees it: its directory must exist and be
 * writable by this process; at the path itself, nothing (resolves undefined) or a socket no
 * process answers on, a killed process's leftover (resolves its stats, to be replaced while it is
 * still that file). Anything else throws a {@link ConfigError} naming `LISTEN_SOCKET`: a socket a
 * process answers on, a symbolic link, a directory, any other file. Nothing is changed.
 */
export async function claimSocketPath(path: string): Promise<Stats | undefined> {
  await checkDirectory(path);
  let found: Stats;
  try {
    found = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw refused(path, `cannot be examined (${codeOf(err)})`);
  }
  if (found.isSymbolicLink()) {
    throw refused(path, 'is a symbolic link: the proxy neither follows nor replaces a link at its socket path; name the path itself');
  }
  if (found.isDirectory())
    throw refused(path, `is a directory: LISTEN_SOCKET names the socket file itself, e.g. ${join(path, 'proxy.sock')}`);
  if (!found.isSocket()) {
    throw refused(
      path,
      `exists and is ${fileKind(found)}, not a socket: the proxy replaces only a socket no process answers on; ` +
        'remove it or choose another path',
    );
  }
  const answer = await tryConnect(path);
  if (answer === 'refused') return found;
  if (answer === 'gone') return undefined;
  if (answer === 'answered') throw new SocketInUseError(path);
  throw refused(path, `is a socket, but whether a process answers on it cannot be told (${answer}); remove it if it is a leftover`);
}

/** Refuses a socket directory that is missing, not a directory, or not writable by this process. */
async function checkDirectory(path: string): Promise<void> {
  const dir = dirname(path);
  try {
    // Followed if a link (`/var/run` is one to `/run`): the directory is the administrator's choice.
    if (!(await stat(dir)).isDirectory()) throw refused(path, `cannot be made: ${dir} is not a directory`);
    await access(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw err instanceof ConfigError ? err : cannotMake(path, err);
  }
}

/**
 * Binds `server` at `path` with exactly `mode`. The umask is set for the bind alone: it is a
 * property of the whole process, and `listen` binds synchronously before returning, so no other
 * file creation of this process (it makes none elsewhere) falls under it. A default ACL on the
 * directory takes precedence over the umask: the mode is then set on the file in the private
 * directory, where no other user can put a link in its place.
 */
async function bindWithMode(server: Server, path: string, mode: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const umask = process.umask(0o777 & ~mode);
    try {
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    } finally {
      process.umask(umask);
    }
  });
  if (((await lstat(path)).mode & 0o777) !== mode) await chmod(path, mode);
}

/** Removes the stale socket `found` at `path`, unless another file has taken the path since. */
async function removeStale(path: string, found: Stats): Promise<void> {
  const now = await lstat(path).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  });
  if (now === undefined) return;
  if (!sameFile(now, found)) {
    throw refused(
      path,
      'changed while the proxy was starting (another file took the place of the stale socket): it is left in place; start again',
    );
  }
  await unlink(path).catch(ignoreCode('ENOENT'));
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** How a connection to the socket at `path` went: answered, refused (no listener), gone, or another error's code. */
function tryConnect(path: string): Promise<'answered' | 'refused' | 'gone' | string> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    const done = (answer: string): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    // A listener whose queue is full makes the connection wait (or fail with EAGAIN): it is in use.
    const timer = setTimeout(() => done('answered'), 1000);
    socket.once('connect', () => done('answered'));
    socket.once('error', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? err.message;
      done(code === 'ECONNREFUSED' ? 'refused' : code === 'ENOENT' ? 'gone' : code === 'EAGAIN' ? 'answered' : code);
    });
  });
}

function fileKind(stats: Stats): string {
  if (stats.isFile()) return 'a regular file';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  return 'another kind of file';
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}

function ignoreCode(code: string): (err: unknown) => void {
  return (err) => {
    if ((err as NodeJS.ErrnoException).code !== code) throw err;
  };
}

/**
 * The refusal of a socket a process answers on: the start refuses it; `check` only warns, since a
 * running proxy holds its own socket, as it holds its own port.
 */
export class SocketInUseError extends ConfigError {
  constructor(path: string) {
    super([`LISTEN_SOCKET ${path} is in use: another process answers on it; stop that process or choose another path`]);
  }
}

function refused(path: string, why: string): ConfigError {
  return new ConfigError([`LISTEN_SOCKET ${path} ${why}`]);
}

/** A failure making the socket: its directory missing or not writable, or a file that appeared at the path meanwhile. */
function cannotMake(path: string, err: unknown): ConfigError {
  const code = codeOf(err);
  const dir = dirname(path);
  if (code === 'ENOENT') return refused(path, `cannot be made: its directory ${dir} does not exist`);
  if (code === 'EEXIST')
    return refused(path, 'appeared while the proxy was starting: another process took the path; start again, or choose another path');
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    const uid = typeof process.getuid === 'function' ? `; the proxy runs as uid ${process.getuid()}` : '';
    return refused(path, `cannot be made in ${dir} (${code}${uid}): the directory must be writable by the proxy`);
  }
  return refused(path, `cannot be made (${code})`);
}
