import { isIP } from 'node:net';

/** Is `host` a loopback name or address (127.0.0.0/8, ::1, localhost)? */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  // An IPv4-mapped loopback address, as written or as the URL parser writes it (::ffff:7f00:1).
  if (isIP(h) === 6) return h === '::1' || h.startsWith('::ffff:127.') || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(h);
  return false;
}
