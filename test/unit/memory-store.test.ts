import { createMemoryTokenStore, MemoryStoreServer } from '../../src/store/memory-backend.js';
import { scryptDeriver, sharedDeriver } from '../../src/store/slot-key.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeLog } from '../helpers/fakes.js';
import { storeContract, type StoreHarness } from '../helpers/store-contract.js';

// One derivation per credential for the whole file: scrypt costs tens of milliseconds each.
const derive = sharedDeriver(scryptDeriver());

storeContract('in memory, on the fake clock', async () => {
  const clock = new FakeClock();
  const server = new MemoryStoreServer(clock);
  const prefix = 'ticket-auth-proxy:';
  const harness: StoreHarness = {
    prefix,
    open: async (options = {}) =>
      createMemoryTokenStore({
        server,
        clock,
        random: Math.random,
        log: new FakeLog(),
        leaseMs: (options.fetchTimeoutMs ?? 10_000) + 1_000,
        observer: options.observer,
        derive,
      }),
    now: () => clock.now(),
    async until(check, withinMs) {
      const end = clock.now() + withinMs;
      while (!(await check())) {
        if (clock.now() >= end) throw new Error(`not within ${withinMs} ms of store time`);
        await clock.advance(10);
      }
    },
    dump: async () => server.dump(),
    put: async (key, value, ttlMs) => server.put(key, value, ttlMs),
    async expire(key, ttlMs) {
      const entry = server.dump().find((k) => k.key === key)!;
      server.put(key, entry.value, ttlMs);
    },
    async fill(key, bytes, { field, ttlMs } = {}) {
      const held = server.dump().find((k) => k.key === key);
      const value = 'A'.repeat(bytes);
      const ttl = ttlMs ?? (held !== undefined && held.ttlMs >= 0 ? held.ttlMs : undefined);
      if (field === undefined) server.put(key, value, ttl);
      else server.put(key, { ...(typeof held?.value === 'object' ? held.value : {}), [field]: value }, ttl);
    },
    // No script runs here: the in-memory store measures a value's length, which costs nothing.
    scriptCommands: async (during) => ({ value: await during(), commands: undefined }),
  };
  return harness;
});
