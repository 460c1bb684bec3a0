/**
 * The two sides of a dual-stack listener: this host's IPv6 loopback, and a host without IPv6,
 * made for one command by test/helpers/without-ipv6.py (its socket(AF_INET6) fails with
 * EAFNOSUPPORT, as under a kernel started with ipv6.disable=1). Where either cannot be had, the
 * tests that need it are skipped with the reason in their titles, except under CI (tools.ts).
 */
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { inCi, lacks, skipNote } from './tools.js';

/** The command prefix that runs a command as on a host without IPv6. */
export const WITHOUT_IPV6 = ['python3', join(import.meta.dirname, 'without-ipv6.py')];

/** Whether a listener can open on ::1. */
async function ipv6Loopback(): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(0, '::1', () => server.close(() => resolve(true)));
  });
}

/** Why a host without IPv6 cannot be made here, or undefined when it can. */
function withoutIpv6Unavailable(): string | undefined {
  if (lacks('python3')) return skipNote('python3').replace(/^ \[skipped: |\]$/g, '');
  const probe = spawnSync(WITHOUT_IPV6[0]!, [...WITHOUT_IPV6.slice(1), process.execPath, '-e', ''], { encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  return (probe.stderr || probe.error?.message || `exit ${probe.status}`).trim();
}

const noIpv6Loopback = !(await ipv6Loopback());
const withoutIpv6Problem = withoutIpv6Unavailable();

/** True when the tests needing IPv6 on loopback are to be skipped. */
export const lacksIpv6 = !inCi() && noIpv6Loopback;
/** The skip reason for a title, empty when the test runs. */
export const ipv6Note = lacksIpv6 ? ' [skipped: this host has no IPv6 loopback (::1)]' : '';

/** True when the tests needing a host without IPv6 are to be skipped. */
export const lacksWithoutIpv6 = !inCi() && withoutIpv6Problem !== undefined;
/** The skip reason for a title, empty when the test runs. */
export const withoutIpv6Note = lacksWithoutIpv6 ? ` [skipped: ${withoutIpv6Problem}]` : '';
