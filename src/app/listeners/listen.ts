import type { AddressInfo, Server } from 'node:net';
import type { Log } from '../../core/log.js';

/** Where a listener opens, and how a message names it and its settings. */
export interface ListenTarget {
  host: string;
  port: number;
  /** e.g. "the admin listener (ADMIN_HOST, ADMIN_PORT)". */
  what: string;
}

/**
 * The dual-stack wildcard: a socket bound to `::` takes IPv6 connections and, as IPv4-mapped
 * addresses, IPv4 ones too (RFC 4291 §2.5.5.2; Node leaves IPV6_V6ONLY off), so one listener
 * answers on an IPv4, an IPv6 and a dual-stack network alike.
 */
const DUAL_STACK = '::';
const IPV4_ANY = '0.0.0.0';

/**
 * What `::` meets on a host without IPv6: no IPv6 sockets at all (a kernel without IPv6, or one
 * started with `ipv6.disable=1`), or no IPv6 address to bind.
 */
const NO_IPV6 = new Set(['EAFNOSUPPORT', 'EADDRNOTAVAIL']);

/**
 * Opens `server` on `target`. `::` falls back to `0.0.0.0` (IPv4 only) where the host has no
 * IPv6, with a log line saying so, as Node does for a server given no host: a setting of `::`
 * means "every address this host has". Any other failure rejects, naming the listener and its
 * settings.
 */
export async function listen(server: Server, target: ListenTarget, log: Log): Promise<AddressInfo> {
  try {
    return await listenOnce(server, target.host, target.port);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (target.host !== DUAL_STACK || code === undefined || !NO_IPV6.has(code)) throw cannotListen(target, target.host, err);
    log.info(
      { host: target.host, code, fallback: IPV4_ANY },
      `${target.what}: this host has no IPv6 (${code} on ${DUAL_STACK}), so it listens on ${IPV4_ANY}, IPv4 only`,
    );
    try {
      return await listenOnce(server, IPV4_ANY, target.port);
    } catch (fallbackErr) {
      throw cannotListen(target, IPV4_ANY, fallbackErr);
    }
  }
}

function listenOnce(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

function cannotListen(target: ListenTarget, host: string, err: unknown): Error {
  const e = err as NodeJS.ErrnoException;
  const shown = host.includes(':') ? `[${host}]` : host;
  return new Error(`${target.what} cannot listen on ${shown}:${target.port} (${e.code ?? e.message})`, { cause: err });
}
