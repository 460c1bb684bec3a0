import { describe, expect } from 'vitest';
import { directToken, headerNames, run } from '../helpers/clients.js';
import { sharedStack } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const it = sharedStack({ mock: { tokenTtlS: 60 } });

describe('response header names', () => {
  it.skipIf(lacks('curl'))(
    `arrive in the letter case the gateway sent, as curl -sI shows them${skipNote('curl')}`,
    async ({ shared: { gateway, proxy, clientId, secret } }) => {
      const through = await run('curl', ['-sI', `${proxy.proxyUrl}/api/v1/tickets`]);
      const direct = await run('curl', [
        '-sI',
        '-H',
        `Authorization: Bearer ${await directToken(gateway, clientId, secret)}`,
        `${gateway.url}/api/v1/tickets`,
      ]);
      expect(through).toMatch(/^ETag: "tickets-v1"\r$/m);
      expect(through).toMatch(/^X-Ticket-Count: 4\r$/m);
      expect(headerNames(through)).toEqual(headerNames(direct));
    },
  );

  it.skipIf(lacks('python3'))(
    `look the same to Python http.client as a direct call, but for the token${skipNote('python3')}`,
    async ({ shared: { gateway, proxy, clientId, secret } }) => {
      const script = [
        'import http.client, json, sys',
        'def names(port, path, auth):',
        '    c = http.client.HTTPConnection("127.0.0.1", port)',
        '    c.request("GET", path, headers=({"Authorization": auth} if auth else {}))',
        '    r = c.getresponse(); r.read()',
        '    return [r.status, r.getheader("ETag"), [n for n, _ in r.getheaders() if n.lower() not in ("date", "connection", "keep-alive")]]',
        'print(json.dumps([names(int(sys.argv[1]), "/api/v1/tickets", None), names(int(sys.argv[2]), sys.argv[3], sys.argv[4])]))',
      ].join('\n');
      const base = new URL(gateway.url).pathname.replace(/\/$/, '');
      const token = await directToken(gateway, clientId, secret);
      const out = JSON.parse(
        await run('python3', ['-c', script, String(proxy.proxyPort), String(gateway.port), `${base}/api/v1/tickets`, `Bearer ${token}`]),
      ) as unknown[];
      expect(out[0]).toEqual([200, '"tickets-v1"', expect.arrayContaining(['ETag', 'X-Ticket-Count'])]);
      expect(out[0]).toEqual(out[1]);
    },
  );
});
