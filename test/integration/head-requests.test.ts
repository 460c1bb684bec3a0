import { describe, expect } from 'vitest';
import { run } from '../helpers/clients.js';
import { sharedStack } from '../helpers/stack.js';
import { lacks, skipNote } from '../helpers/tools.js';

const it = sharedStack({ mock: { tokenTtlS: 60 } });

describe('HEAD requests', () => {
  it.skipIf(lacks('curl'))(
    `reuse one pooled upstream connection, as curl -I with ten URLs on one connection shows${skipNote('curl')}`,
    async ({ shared: { gateway, proxy } }) => {
      // Warm the pool so the count below is of reuse, not of the first connect.
      expect((await fetch(`${proxy.proxyUrl}/api/v1/tickets`)).status).toBe(200);
      const before = gateway.connections();
      const urls = Array.from({ length: 10 }, (_, i) => `${proxy.proxyUrl}/api/v1/tickets?head=${i}`);
      const out = await run('curl', ['-sI', ...urls]);
      expect(out.match(/^HTTP\/1\.1 200 /gm)).toHaveLength(10);
      expect(gateway.connections() - before).toBeLessThanOrEqual(1);
    },
  );
});
