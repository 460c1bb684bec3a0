// The simulated time of `npm run bench:fleet`: a seeded random generator, a clock that moves from
// one timer to the next, a log that says nothing, and a sidecar's token source on them.
import { RefreshLoop } from '../../dist/token/refresh-loop.js';
import { backoffPolicy, DEFAULT_SCHEDULE } from '../../dist/token/refresh-schedule.js';
import { fetchingSupply } from '../../dist/token/token-supply.js';

/** A small seeded generator (mulberry32), so that two runs print the same figures. */
export function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A clock that moves from one timer to the next: a binary heap ordered by due time, then creation. */
export class SimClock {
  time;
  seq = 0;
  heap = [];
  cancelled = new Set();

  constructor(epoch) {
    this.time = epoch;
  }

  now() {
    return this.time;
  }

  setTimeout(fn, ms) {
    const timer = { at: this.time + Math.max(0, ms), seq: ++this.seq, fn };
    this.push(timer);
    return timer.seq;
  }

  clearTimeout(handle) {
    this.cancelled.add(handle);
  }

  /** Runs every timer due up to `end`; promise chains settle between instants. */
  async runUntil(end, onInstant) {
    while (this.heap.length > 0 && this.heap[0].at <= end) {
      const at = this.heap[0].at;
      this.time = at;
      let ran = false;
      while (this.heap.length > 0 && this.heap[0].at === at) {
        const timer = this.pop();
        if (this.cancelled.delete(timer.seq)) continue;
        timer.fn();
        ran = true;
      }
      // An instant whose timers were all cleared (a store operation's timeout, once it answered) costs nothing.
      if (!ran) continue;
      // A macrotask turn drains every microtask: fetch results reach the token sources.
      await new Promise((resolve) => setImmediate(resolve));
      onInstant?.(at);
    }
    this.time = end;
  }

  push(timer) {
    const h = this.heap;
    h.push(timer);
    for (let i = h.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if (!before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  pop() {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l], h[m])) m = l;
        if (r < h.length && before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

function before(a, b) {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** A log that says nothing: ten thousand sidecars would fill a terminal. */
export const quiet = { error() {}, warn() {}, info() {}, debug() {} };

/**
 * One sidecar: the product's refresh loop for the fleet's one credential, built as the wiring
 * builds it (src/app/routes.ts), on the simulated clock, started at a random moment within the
 * first second. `schedule`: the refresh schedule (the product's unless given); `withStore`: the
 * supply around the sidecar's own fetch (a shared store's), given the loop's backoff. Returns what
 * the simulation reads of it: the token usable now, the 401 a request meets, and its stop.
 */
export function sidecar({ fetchToken, clock, random, refreshRatio, schedule = DEFAULT_SCHEDULE, withStore }) {
  const backoff = backoffPolicy(schedule, random);
  const own = fetchingSupply(fetchToken, { clock, backoff, schedule });
  const loop = new RefreshLoop({
    label: 'sidecar',
    credential: { clientId: 'fleet', clientSecret: 'fleet' },
    supply: withStore?.(own, backoff) ?? own,
    backoff,
    clock,
    random,
    refreshRatio,
    waitTimeoutMs: 5000,
    log: quiet,
  });
  clock.setTimeout(() => loop.start(), Math.floor(random() * 1000));
  return {
    current: () => loop.held.authorization()?.token,
    invalidate: (token) => loop.held.invalidate(token),
    stop: () => loop.stop(),
  };
}
