import { fileURLToPath } from 'node:url';
import { describe, expect } from 'vitest';
import { directToken, run } from '../helpers/clients.js';
import { sharedStack } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const it = sharedStack({ mock: { tokenTtlS: 60 } });

describe.skipIf(lacks('javac'))(`Java 17 HttpClient (offers h2c) and HttpURLConnection${skipNote('javac')}`, () => {
  it('see the proxy as the gateway itself, but for the token', async ({ shared: { gateway, proxy, clientId, secret } }) => {
    const before = gateway.apiRequests.length;
    const source = fileURLToPath(new URL('java/Clients.java', import.meta.url));
    const token = await directToken(gateway, clientId, secret);
    // One JVM start for all four calls; C1 only: the calls are few, the start is what costs.
    const out = await run('java', ['-XX:TieredStopAtLevel=1', '-Xshare:auto', source, proxy.proxyUrl, gateway.url, token]);
    const lines = out
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    const by = (client: string, target: string): string[] => lines.find((l) => l[0] === client && l[1] === target)!.slice(2);
    expect(by('HttpClient', 'proxy')).toEqual(['200', 'HTTP_1_1', '"tickets-v1"', 'true']);
    expect(by('HttpURLConnection', 'proxy')).toEqual(['200', 'HTTP_1_1', '"tickets-v1"', 'true']);
    expect(by('HttpClient', 'proxy')).toEqual(by('HttpClient', 'gateway'));
    expect(by('HttpURLConnection', 'proxy')).toEqual(by('HttpURLConnection', 'gateway'));
    // The h2c offer stayed with the proxy.
    const direct = `Bearer ${token}`;
    const forwarded = gateway.apiRequests
      .slice(before)
      .filter((r) => r.headers['user-agent']?.toString().startsWith('Java-http-client') && r.headers.authorization !== direct);
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]!.headers.upgrade).toBeUndefined();
    expect(forwarded[0]!.headers['http2-settings']).toBeUndefined();
  }, 30_000);
});
