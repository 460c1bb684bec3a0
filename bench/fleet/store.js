// `npm run bench:fleet`, the shared token store: a fleet of sidecars with one credential, each the
// product's own token source with the product's store supply (dist/token/from-store/store-supply.js) and its
// own client of one in-memory store (dist/store/memory-backend.js), on the simulated clock. The
// token endpoint counts every fetch; a figure is fetches per token lifetime for the whole fleet.
import { createMemoryTokenStore, MemoryStoreServer } from '../../dist/store/memory-backend.js';
import { scryptDeriver, sharedDeriver } from '../../dist/store/slot-key.js';
import { TokenFetchError } from '../../dist/token/errors.js';
import { storeSupply } from '../../dist/token/from-store/store-supply.js';
import { CurrentSlot } from '../../dist/token/from-store/slot-seed.js';
import { quiet, seeded, sidecar, SimClock } from './sim.js';

const KEY = { description: 'token_url=https://idp.example/token client_id=fleet', keyMaterial: Buffer.from('fleet-secret') };
const FETCH_TIMEOUT_MS = 10_000;

/**
 * One timeline of a fleet: `sidecars` started within a second, tokens of `ttlMs`, for `horizonMs`,
 * with the store (`store: true`) or without. Events, each optional, at offsets from the start:
 * `revokeAtMs` (the gateway rejects the token then held: each sidecar meets its 401 within the
 * next second and calls `invalidate`, as the request path does), `storeDown` (the store refuses
 * connections for `{ fromMs, forMs }`), `throttle` (the token endpoint answers 429 without
 * Retry-After for `{ fromMs, forMs }`). Returns the start time of every fetch, as offsets.
 */
export async function fleetTimeline(options) {
  const { sidecars, ttlMs, horizonMs, refreshRatio, epoch, latencyMs, seed } = options;
  const clock = new SimClock(epoch);
  const random = seeded(seed);
  const server = new MemoryStoreServer(clock);
  const derive = sharedDeriver(scryptDeriver());
  // One scrypt for the fleet, before the clock runs (its thread does not run on simulated time).
  await derive(KEY.keyMaterial, KEY.description);
  const fetchedAt = [];
  let issued = 0;
  const inWindow = (w, at) => w !== undefined && at >= w.fromMs && at < w.fromMs + w.forMs;
  const fetchToken = () => {
    const sentAt = clock.now() - epoch;
    fetchedAt.push(sentAt);
    const throttled = inWindow(options.throttle, sentAt);
    const accessToken = `t${++issued}`;
    return new Promise((resolve, reject) => {
      clock.setTimeout(() => {
        if (throttled) reject(new TokenFetchError('rate_limited', 'token endpoint answered 429', { status: 429 }));
        else resolve({ accessToken, lifetimeMs: ttlMs });
      }, latencyMs);
    });
  };
  const sources = [];
  for (let i = 0; i < sidecars; i++) {
    let withStore;
    if (options.store) {
      const store = createMemoryTokenStore({ server, clock, random, log: quiet, leaseMs: FETCH_TIMEOUT_MS + 1_000, derive });
      const slot = new CurrentSlot(store, clock);
      slot.use(KEY);
      withStore = (own, backoff) =>
        storeSupply(own, { store, slot, fetchTimeoutMs: FETCH_TIMEOUT_MS, storeTimeoutMs: 250, backoff, clock, random });
    }
    sources.push(sidecar({ fetchToken, clock, random, refreshRatio, withStore }));
  }
  if (options.storeDown !== undefined) {
    clock.setTimeout(() => (server.fault = 'unreachable'), options.storeDown.fromMs);
    clock.setTimeout(() => (server.fault = 'none'), options.storeDown.fromMs + options.storeDown.forMs);
  }
  if (options.revokeAtMs !== undefined) {
    clock.setTimeout(() => {
      const revoked = new Set(sources.map((s) => s.current()));
      for (const s of sources) {
        clock.setTimeout(
          () => {
            const token = s.current();
            if (revoked.has(token)) s.invalidate(token);
          },
          Math.floor(random() * 1000),
        );
      }
    }, options.revokeAtMs);
  }
  await clock.runUntil(epoch + horizonMs);
  for (const s of sources) s.stop();
  return { fetchedAt, storeCommands: server.commands };
}

/** Fetches whose start falls in [fromMs, toMs). */
export function fetchesBetween(fetchedAt, fromMs, toMs) {
  return fetchedAt.filter((at) => at >= fromMs && at < toMs).length;
}
