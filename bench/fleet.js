// `npm run bench:fleet`: what a fleet of sidecars does to the token endpoint.
//
// Runs the product's own token source (dist/token/token-source.js) for every sidecar of a fleet,
// on a simulated clock: the sidecars start within the same second, the token endpoint issues
// tokens of one hour and answers in 50 ms, and it is down (503, no Retry-After) for five minutes
// over the first refresh window. Prints the token endpoint's requests per second, phase by phase,
// and whether any sidecar was ever without a valid token.
//
// Settings (environment): FLEET_SIDECARS (10000), FLEET_HOURS (2), FLEET_TOKEN_TTL_S (3600),
// FLEET_OUTAGE_AT_S (2700: inside the first refresh window, where an outage hurts), FLEET_OUTAGE_S
// (300), FLEET_REFRESH_RATIO (0.8, the default of TOKEN_REFRESH_RATIO), FLEET_SEED (1).
import { TokenFetchError } from '../dist/errors.js';
import { TokenSource } from '../dist/token/token-source.js';

const env = process.env;
const sidecars = Number(env.FLEET_SIDECARS ?? 10_000);
const horizonMs = Number(env.FLEET_HOURS ?? 2) * 3_600_000;
const ttlMs = Number(env.FLEET_TOKEN_TTL_S ?? 3600) * 1000;
const outageAtMs = Number(env.FLEET_OUTAGE_AT_S ?? 2700) * 1000;
const outageMs = Number(env.FLEET_OUTAGE_S ?? 300) * 1000;
const refreshRatio = Number(env.FLEET_REFRESH_RATIO ?? 0.8);
const latencyMs = 50;
const epoch = Date.UTC(2026, 0, 1);

/** A small seeded generator (mulberry32), so that two runs print the same figures. */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = seeded(Number(env.FLEET_SEED ?? 1));

/** A clock that moves from one timer to the next: a binary heap ordered by due time, then creation. */
class SimClock {
  time = epoch;
  seq = 0;
  heap = [];
  cancelled = new Set();

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
      while (this.heap.length > 0 && this.heap[0].at === at) {
        const timer = this.pop();
        if (this.cancelled.delete(timer.seq)) continue;
        timer.fn();
      }
      // A macrotask turn drains every microtask: fetch results reach the token sources.
      await new Promise((resolve) => setImmediate(resolve));
      onInstant?.(at);
    }
    this.time = end;
  }

  push(timer) {
    const h = this.heap;
    h.push(timer);
    for (let i = h.length - 1; i > 0; ) {
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
      for (let i = 0; ; ) {
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

const clock = new SimClock();
const perSecond = new Uint32Array(Math.ceil(horizonMs / 1000) + 1);
const failedPerSecond = new Uint32Array(perSecond.length);
let issued = 0;

/** The token endpoint: 50 ms per answer, down with 503 during the outage. */
function fetchToken() {
  const sentAt = clock.now() - epoch;
  perSecond[Math.floor(sentAt / 1000)]++;
  const down = sentAt >= outageAtMs && sentAt < outageAtMs + outageMs;
  if (down) failedPerSecond[Math.floor(sentAt / 1000)]++;
  return new Promise((resolve, reject) => {
    clock.setTimeout(() => {
      if (down) reject(new TokenFetchError('server_error', 'token endpoint answered 503', { status: 503 }));
      else resolve({ accessToken: `t${++issued}`, lifetimeMs: ttlMs });
    }, latencyMs);
  });
}

const quiet = { error() {}, warn() {}, info() {}, debug() {} };
const sources = [];
for (let i = 0; i < sidecars; i++) {
  const source = new TokenSource({
    label: `sidecar-${i}`,
    credential: { clientId: 'fleet', clientSecret: 'fleet' },
    fetchToken,
    clock,
    random,
    refreshRatio,
    waitTimeoutMs: 5000,
    log: quiet,
  });
  sources.push(source);
  // Started within the same second.
  clock.setTimeout(() => source.start(), Math.floor(random() * 1000));
}

// Every 10 simulated seconds after start-up: sidecars without a valid token.
let worstWithout = 0;
let worstWithoutAt = 0;
const checkEveryMs = 10_000;
let nextCheck = epoch + 60_000;
const started = Date.now();
await clock.runUntil(epoch + horizonMs, (at) => {
  while (at >= nextCheck) {
    let without = 0;
    for (const s of sources) if (s.current() === undefined) without++;
    if (without > worstWithout) {
      worstWithout = without;
      worstWithoutAt = nextCheck - epoch;
    }
    nextCheck += checkEveryMs;
  }
});
for (const s of sources) s.stop();

// ---------------------------------------------------------------------------------------------

/** Peak and mean requests per second over [fromS, toS), the mean over seconds with any request too. */
function phase(name, fromS, toS) {
  let total = 0;
  let peak = 0;
  let peakAt = fromS;
  let first = -1;
  let last = -1;
  let failed = 0;
  for (let s = fromS; s < Math.min(toS, perSecond.length); s++) {
    const n = perSecond[s];
    total += n;
    failed += failedPerSecond[s];
    if (n > peak) {
      peak = n;
      peakAt = s;
    }
    if (n > 0) {
      if (first < 0) first = s;
      last = s;
    }
  }
  const activeS = first < 0 ? 0 : last - first + 1;
  const meanActive = activeS ? total / activeS : 0;
  return { name, fromS, toS, total, failed, peak, peakAt, activeFromS: first, activeS, meanActive, meanPhase: total / (toS - fromS) };
}

const outageFromS = outageAtMs / 1000;
const outageToS = (outageAtMs + outageMs) / 1000;
const horizonS = horizonMs / 1000;
const phases = [
  phase('start-up', 0, 60),
  phase('steady (before the outage)', 60, outageFromS),
  phase('outage', outageFromS, outageToS),
  phase('recovery (60 s after)', outageToS, outageToS + 60),
  phase('steady (after recovery)', outageToS + 60, horizonS),
];

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const clockTime = (s) => `${String(Math.floor(s / 60)).padStart(3)}:${String(s % 60).padStart(2, '0')}`;
const lines = [];
lines.push('# Fleet simulation: the token endpoint under a fleet of sidecars', '');
lines.push(
  `${sidecars} sidecars started within 1 s; tokens of ${ttlMs / 1000} s; refresh ratio ${refreshRatio}, jitter up to 10 % of the lifetime; ` +
    `${horizonS / 3600} simulated hours; token endpoint down (503) from ${clockTime(outageFromS)} for ${outageMs / 1000} s. ` +
    `Simulated in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
  '',
);
lines.push('| phase | from (min:s) | requests | failed | peak req/s (at) | active window s | mean req/s in window | peak / mean in window | mean req/s over phase | peak / mean over phase |');
lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
for (const p of phases) {
  lines.push(
    `| ${p.name} | ${clockTime(p.fromS)} | ${p.total} | ${p.failed} | ${p.peak} (${clockTime(p.peakAt)}) | ${p.activeS} | ${fmt(p.meanActive)} | ${fmt(p.peak / p.meanActive, 2)} | ${fmt(p.meanPhase, 2)} | ${fmt(p.peak / p.meanPhase, 1)} |`,
  );
}
const steady = phases.filter((p) => p.name.startsWith('steady') && p.total > 0);
const recovery = phases[3];
lines.push('');
lines.push(`- Fetches per sidecar over ${horizonS / 3600} h: ${fmt(perSecond.reduce((a, b) => a + b, 0) / sidecars, 2)} (${issued} tokens issued).`);
lines.push(`- Most sidecars without a valid token at one check (every 10 s after start-up): ${worstWithout}${worstWithout ? ` at ${clockTime(worstWithoutAt / 1000)}` : ''}.`);
for (const p of steady) {
  const inWave = p.peak / p.meanActive;
  const overPhase = p.peak / p.meanPhase;
  lines.push(
    `- Target, ${p.name}: peak ≤ 2× mean. Within the refresh wave (${p.activeS} s): ${fmt(inWave, 2)}× (${inWave <= 2 ? 'met' : 'NOT met'}); ` +
      `over the whole phase: ${fmt(overPhase, 1)}× (${overPhase <= 2 ? 'met' : 'NOT met'}).`,
  );
}
lines.push(
  `- After the outage: ${recovery.total} requests over ${recovery.activeS} s (peak ${recovery.peak}/s, ${fmt(recovery.peak / Math.max(1, recovery.total) * 100)} % of them in the peak second): ` +
    `${recovery.activeS >= 10 && recovery.peak / Math.max(1, recovery.total) < 0.2 ? 'spread over the backoff window' : 'a spike'}.`,
);
process.stdout.write(lines.join('\n') + '\n');
