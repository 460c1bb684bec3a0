import { createServer, connect, Server, type ListenOptions } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { listen } from '../../src/app/listeners/listen.js';
import { FakeLog } from '../helpers/fakes.js';
import { ipv6Note, lacksIpv6 } from '../helpers/ipv6.js';

const ADMIN = 'the admin listener (ADMIN_HOST, ADMIN_PORT)';

/**
 * A server on a host without IPv6: a listen on an IPv6 address fails as such a kernel fails it
 * (`code`); IPv4 listens are real.
 */
class Ipv4OnlyServer extends Server {
  constructor(private readonly code: string) {
    super();
  }
  override listen(...args: unknown[]): this {
    const [port, host, callback] = args as [number, string, () => void];
    if (host.includes(':')) {
      const err: NodeJS.ErrnoException = new Error(`listen ${this.code} ${host}:${port}`);
      err.code = this.code;
      process.nextTick(() => this.emit('error', err));
      return this;
    }
    return super.listen({ port, host } satisfies ListenOptions, callback);
  }
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});
function track<S extends Server>(server: S): S {
  servers.push(server);
  return server;
}

/** Resolves once a TCP connection to `host`:`port` is accepted, rejects when it is refused. */
function reach(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

describe('the listen step', () => {
  it.skipIf(lacksIpv6)(`answers on IPv6 and IPv4 alike when told ::, where the host has IPv6${ipv6Note}`, async () => {
    const log = new FakeLog();
    const address = await listen(track(createServer()), { host: '::', port: 0, what: ADMIN }, log);
    expect(address.address).toBe('::');
    await reach('::1', address.port);
    await reach('127.0.0.1', address.port);
    expect(log.lines).toEqual([]);
  });

  it.each(['EAFNOSUPPORT', 'EADDRNOTAVAIL'])(
    'falls back to 0.0.0.0 with a log line when :: meets a host without IPv6 (%s)',
    async (code) => {
      const log = new FakeLog();
      const address = await listen(track(new Ipv4OnlyServer(code)), { host: '::', port: 0, what: ADMIN }, log);
      expect(address).toMatchObject({ address: '0.0.0.0', family: 'IPv4' });
      await reach('127.0.0.1', address.port);
      expect(log.lines).toEqual([
        {
          level: 'info',
          obj: { host: '::', code, fallback: '0.0.0.0' },
          msg: `${ADMIN}: this host has no IPv6 (${code} on ::), so it listens on 0.0.0.0, IPv4 only`,
        },
      ]);
    },
  );

  it.skipIf(lacksIpv6)(`refuses, naming the settings, when the port is taken, without trying IPv4 alone${ipv6Note}`, async () => {
    const holder = track(createServer());
    const { port } = await listen(holder, { host: '::', port: 0, what: 'a holder' }, new FakeLog());
    const log = new FakeLog();
    await expect(listen(track(createServer()), { host: '::', port, what: ADMIN }, log)).rejects.toThrow(
      `${ADMIN} cannot listen on [::]:${port} (EADDRINUSE)`,
    );
    expect(log.lines).toEqual([]);
  });

  it('refuses an IPv6 address other than :: on a host without IPv6, as asked', async () => {
    await expect(
      listen(track(new Ipv4OnlyServer('EADDRNOTAVAIL')), { host: '::1', port: 8181, what: ADMIN }, new FakeLog()),
    ).rejects.toThrow(`${ADMIN} cannot listen on [::1]:8181 (EADDRNOTAVAIL)`);
  });

  it('says so when the IPv4 fallback fails too', async () => {
    const holder = track(createServer());
    const { port } = await listen(holder, { host: '0.0.0.0', port: 0, what: 'a holder' }, new FakeLog());
    await expect(listen(track(new Ipv4OnlyServer('EAFNOSUPPORT')), { host: '::', port, what: ADMIN }, new FakeLog())).rejects.toThrow(
      `${ADMIN} cannot listen on 0.0.0.0:${port} (EADDRINUSE)`,
    );
  });
});
