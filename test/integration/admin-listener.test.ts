import { describe, expect } from 'vitest';
import { ipv6Note, lacksIpv6, lacksWithoutIpv6, WITHOUT_IPV6, withoutIpv6Note } from '../helpers/ipv6.js';
import { test as it } from '../helpers/stack.js';

describe('the admin listener', () => {
  it('serves /livez, /readyz and every contract metric on its own port', async ({ stack }) => {
    const started = await stack({ mock: { tokenTtlS: 900 }, ready: false });
    const { proxy, secret } = started;
    expect((await fetch(`${proxy.adminUrl}/livez`)).status).toBe(200);
    await started.untilReady();
    await fetch(`${proxy.proxyUrl}/api/v1/tickets`);
    const res = await fetch(`${proxy.adminUrl}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    for (const name of [
      'ticket_auth_proxy_token_fetches_total',
      'ticket_auth_proxy_token_fetch_duration_seconds',
      'ticket_auth_proxy_token_expiry_timestamp_seconds',
      'ticket_auth_proxy_token_last_success_timestamp_seconds',
      'ticket_auth_proxy_token_consecutive_failures',
      'ticket_auth_proxy_requests_total',
      'ticket_auth_proxy_request_duration_seconds',
      'ticket_auth_proxy_upstream_unauthorized_total',
      'ticket_auth_proxy_token_cache_entries',
      'ticket_auth_proxy_upstream_stalls_total',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(text).toMatch(/ticket_auth_proxy_token_fetches_total\{route="default",outcome="success"\} 1/);
    expect(text).not.toContain('client');
    expect(text).not.toContain(secret);
    // Admin requests are not counted as proxied requests.
    expect(text).toMatch(/ticket_auth_proxy_requests_total\{route="default",method="GET",code="200"\} 1\n/);
    expect((await fetch(`${proxy.adminUrl}/nothing`)).status).toBe(404);
  });
});

describe('the admin listener on ADMIN_HOST=:: (as the chart sets it)', () => {
  it.skipIf(lacksIpv6)(`answers the probes on IPv6 and IPv4 alike, where the host has IPv6${ipv6Note}`, async ({ stack }) => {
    const { proxy } = await stack({ env: { ADMIN_HOST: '::' } });
    expect(proxy.lines().find((l) => l.msg === 'listeners up')?.admin).toMatchObject({ host: '::' });
    expect((await fetch(`http://[::1]:${proxy.adminPort}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${proxy.adminPort}/readyz`)).status).toBe(200);
    expect(proxy.lines().filter((l) => l.msg?.includes('no IPv6'))).toEqual([]);
  });

  it.skipIf(lacksWithoutIpv6)(
    `falls back to 0.0.0.0, saying so, on a host without IPv6, and answers the probes there${withoutIpv6Note}`,
    async ({ stack }) => {
      const { proxy } = await stack({ env: { ADMIN_HOST: '::' }, wrap: WITHOUT_IPV6 });
      const fallback = await proxy.waitForLog((l) => l.msg?.startsWith('the admin listener (ADMIN_HOST, ADMIN_PORT)') === true, 1000);
      expect(fallback).toMatchObject({
        levelName: 'info',
        code: 'EAFNOSUPPORT',
        fallback: '0.0.0.0',
        msg: 'the admin listener (ADMIN_HOST, ADMIN_PORT): this host has no IPv6 (EAFNOSUPPORT on ::), so it listens on 0.0.0.0, IPv4 only',
      });
      expect(proxy.lines().find((l) => l.msg === 'listeners up')?.admin).toMatchObject({ host: '0.0.0.0' });
      expect((await fetch(`http://127.0.0.1:${proxy.adminPort}/readyz`)).status).toBe(200);
      // The proxy listener, on 127.0.0.1 as asked, and the gateway behind it are untouched.
      expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
    },
  );
});
