/**
 * Real Redis servers for the token store's tests: Debian's `redis-server` (scripts/test-tools.sh),
 * started from the test on loopback ports, in the foreground, without persistence; standalone
 * with an ACL user limited to a prefix, over TLS with a throwaway CA, or a three-node cluster made
 * with `redis-cli --cluster create`. Also what a store can do wrong: killed and restarted on the
 * same port, stopped (SIGSTOP: accepts, never answers), a socket that accepts and never answers,
 * a closed port.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll } from 'vitest';
import { closedPort, pollUntil } from './index.js';

const run = promisify(execFile);

/** The administrator's password: the `default` user, which the tests use to set up and read back. */
export const ADMIN_PASSWORD = 'admin-password';

/** Exactly the commands the proxy sends, as docs/token-store.md lists them: no category. */
export const STORE_COMMANDS =
  '-@all +auth +hello +ping +select +eval +evalsha +get +set +del +type +pttl +pexpire +hget +hmget +hset +hkeys +hdel +strlen +hstrlen';

/**
 * The ACL line the documentation gives for a user limited to its prefix (plus the cluster commands
 * in cluster mode); with `TOKEN_STORE_SCRIPTS=functions`, `+fcall` in place of `+eval +evalsha`.
 */
export function aclRules(prefix: string, cluster = false, scripts: 'eval' | 'functions' = 'eval'): string[] {
  const commands = STORE_COMMANDS.split(' ');
  return [
    `~${prefix}*`,
    'resetchannels',
    ...(scripts === 'functions' ? [...commands.filter((c) => c !== '+eval' && c !== '+evalsha'), '+fcall'] : commands),
    ...(cluster ? ['+cluster|slots', '+cluster|shards'] : []),
  ];
}

export interface RedisOptions {
  /** A user limited as the documentation says. */
  user?: { name: string; password: string; prefix: string; scripts?: 'eval' | 'functions' };
  /**
   * TLS only (no plain port): the server's certificate and key, the CA that verifies clients,
   * and the client certificate every client must then present (the administrator's too).
   */
  tls?: { cert: string; key: string; ca: string; client?: { cert: string; key: string } };
  /** Extra configuration lines. */
  extra?: string[];
  /** The `default` user without a password (as a Redis left open): the administrator uses it without one. */
  openDefaultUser?: boolean;
}

export interface RedisServer {
  readonly port: number;
  /** `redis://` (or `rediss://`) on 127.0.0.1, without credentials. */
  readonly url: string;
  /** Runs a command as the administrator; returns redis-cli's raw output, trimmed. */
  cli(...args: string[]): Promise<string>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /** SIGSTOP: the kernel still accepts connections, nothing answers. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
afterAll(() => {
  for (const child of live) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});

/**
 * A port free on 127.0.0.1 whose cluster bus port (10000 above) is free and valid too: the
 * ephemeral range reaches past 55535.
 */
async function freeClusterPort(): Promise<number> {
  const bindable = (port: number): Promise<boolean> =>
    new Promise((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 25_000);
    if ((await bindable(port)) && (await bindable(port + 10_000))) return port;
  }
}

function configLines(port: number, dir: string, options: RedisOptions): string[] {
  const lines = [
    'bind 127.0.0.1',
    `dir ${dir}`,
    'save ""',
    'appendonly no',
    ...(options.openDefaultUser ? [] : [`requirepass ${ADMIN_PASSWORD}`, `masterauth ${ADMIN_PASSWORD}`]),
    'protected-mode no',
    'loglevel warning',
    // A replica's first sync at once (the default waits 5 s for more replicas to share it).
    'repl-diskless-sync-delay 0',
  ];
  if (options.tls) {
    writeFileSync(join(dir, 'server.pem'), options.tls.cert);
    writeFileSync(join(dir, 'server.key'), options.tls.key);
    writeFileSync(join(dir, 'ca.pem'), options.tls.ca);
    if (options.tls.client) {
      writeFileSync(join(dir, 'client.pem'), options.tls.client.cert);
      writeFileSync(join(dir, 'client.key'), options.tls.client.key);
    }
    lines.push('port 0', `tls-port ${port}`, `tls-cert-file ${dir}/server.pem`, `tls-key-file ${dir}/server.key`);
    lines.push(`tls-ca-cert-file ${dir}/ca.pem`, `tls-auth-clients ${options.tls.client ? 'yes' : 'no'}`);
    lines.push(`tls-cluster ${options.extra?.includes('cluster-enabled yes') ? 'yes' : 'no'}`);
  } else {
    lines.push(`port ${port}`);
  }
  if (options.user)
    lines.push(
      ['user', options.user.name, 'on', `>${options.user.password}`, ...aclRules(options.user.prefix, false, options.user.scripts)].join(
        ' ',
      ),
    );
  return [...lines, ...(options.extra ?? [])];
}

async function spawnRedis(
  port: number,
  dir: string,
  options: RedisOptions,
  cli: (...a: string[]) => Promise<string>,
): Promise<ChildProcess> {
  const conf = join(dir, 'redis.conf');
  writeFileSync(conf, `${configLines(port, dir, options).join('\n')}\n`);
  const child = spawn('redis-server', [conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.once('exit', () => live.delete(child));
  try {
    await pollUntil(
      async () => {
        if (child.exitCode !== null) throw new Error('exited');
        return (await cli('PING')) === 'PONG';
      },
      { timeoutMs: 10_000 },
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`redis-server did not start on ${port}: ${(err as Error).message}; ${stderr}`, { cause: err });
  }
  return child;
}

/** Starts one redis-server on a loopback port. */
export async function startRedis(options: RedisOptions = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tap-redis-'));
  // A standalone server may be killed and restarted on its port: below the ephemeral range, no
  // other socket (nor a reconnecting client's connection to itself) takes the port meanwhile.
  const port = options.extra?.includes('cluster-enabled yes') ? await freeClusterPort() : await closedPort();
  const tlsArgs = options.tls
    ? [
        '--tls',
        '--cacert',
        join(dir, 'ca.pem'),
        ...(options.tls.client ? ['--cert', join(dir, 'client.pem'), '--key', join(dir, 'client.key')] : []),
      ]
    : [];
  const cli = async (...args: string[]): Promise<string> => {
    const { stdout } = await run(
      'redis-cli',
      [
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        ...tlsArgs,
        '--no-auth-warning',
        ...(options.openDefaultUser ? [] : ['-a', ADMIN_PASSWORD]),
        ...args,
      ],
      {
        timeout: 5_000,
      },
    );
    return stdout.trim();
  };
  let child = await spawnRedis(port, dir, options, cli);
  const exit = (c: ChildProcess): Promise<void> =>
    c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((resolve) => c.once('exit', () => resolve()));
  return {
    port,
    url: `${options.tls ? 'rediss' : 'redis'}://127.0.0.1:${port}`,
    cli,
    async kill() {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exit(child);
    },
    async restart() {
      child = await spawnRedis(port, dir, options, cli);
    },
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
    async stop() {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exit(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisCluster {
  readonly nodes: RedisServer[];
  /** The seed URLs, comma-separated, without credentials. */
  readonly url: string;
  stop(): Promise<void>;
}

/** Three masters, no replicas, the slots shared out by `redis-cli --cluster create`. */
export async function startRedisCluster(options: Omit<RedisOptions, 'extra'> = {}): Promise<RedisCluster> {
  const extra = ['cluster-enabled yes', 'cluster-node-timeout 5000', 'cluster-require-full-coverage no'];
  const nodes: RedisServer[] = [];
  for (let i = 0; i < 3; i++) {
    // Each node's cluster file in its own folder.
    nodes.push(await startRedis({ ...options, extra: [...extra, 'cluster-config-file nodes.conf'] }));
  }
  const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
  const tlsArgs = options.tls ? ['--tls', '--insecure'] : [];
  await run('redis-cli', ['--no-auth-warning', '-a', ADMIN_PASSWORD, ...tlsArgs, '--cluster', 'create', ...addresses, '--cluster-yes'], {
    timeout: 30_000,
  });
  await pollUntil(
    async () => (await Promise.all(nodes.map((n) => n.cli('CLUSTER', 'INFO')))).every((i) => i.includes('cluster_state:ok')),
    {
      timeoutMs: 15_000,
      intervalMs: 100,
    },
  );
  if (options.user) {
    const { name, password, prefix } = options.user;
    for (const n of nodes)
      await n.cli('ACL', 'SETUSER', name, 'reset', 'on', `>${password}`, ...aclRules(prefix, true, options.user.scripts));
  }
  return {
    nodes,
    url: nodes.map((n) => n.url).join(','),
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

/** A socket that accepts every connection and never answers (a store behind a dead route, or hung). */
export async function blackHole(): Promise<{
  port: number;
  connections(): number;
  open(): number;
  /** Bytes received so far, from every connection. */
  received(): number;
  close(): Promise<void>;
}> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  let received = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    // Read and drop what comes, so a client's close is seen (an unread socket never ends).
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => accepted,
    open: () => sockets.size,
    received: () => received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A store that holds its answer to each command until the test calls `answer()`: `AUTH`,
 * `SELECT` and `PING` are answered `+OK`, the rest with an error. What it was sent is kept, by
 * command name, so a test moves a clock between a command's arrival and its answer.
 */
export async function heldStore(): Promise<{
  port: number;
  commands: string[];
  /** Resolves once a command named `name` has come (at once when one already has). */
  received(name: string): Promise<void>;
  /** Sends the answers held so far. */
  answer(): void;
  close(): Promise<void>;
}> {
  const sockets = new Set<Socket>();
  const commands: string[] = [];
  const held: (() => void)[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk: Buffer) => {
      // Each command comes whole after the answer to the one before (no pipelining here).
      for (const [, name] of String(chunk).matchAll(/^\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n/gm)) {
        const command = name!.toUpperCase();
        commands.push(command);
        held.push(() => {
          if (!socket.destroyed) socket.write(['AUTH', 'SELECT', 'PING'].includes(command) ? '+OK\r\n' : '-ERR unknown command\r\n');
        });
      }
      for (const w of waiters) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    commands,
    received: (name) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (!commands.includes(name)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
    answer: () => {
      for (const send of held.splice(0)) send();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
