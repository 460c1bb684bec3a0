import { describe, expect } from 'vitest';
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
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(text).toMatch(/ticket_auth_proxy_token_fetches_total\{outcome="success"\} 1/);
    expect(text).not.toContain('client');
    expect(text).not.toContain(secret);
    // Admin requests are not counted as proxied requests.
    expect(text).toMatch(/ticket_auth_proxy_requests_total\{method="GET",code="200"\} 1\n/);
    expect((await fetch(`${proxy.adminUrl}/nothing`)).status).toBe(404);
  });
});
