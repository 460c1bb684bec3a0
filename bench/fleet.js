// `npm run bench:fleet`: what a fleet of sidecars does to the token endpoint.
//
// Runs the product's own refresh loop (dist/token/refresh-loop.js) for every sidecar of a fleet,
// on a simulated clock: the sidecars start within the same second, the token endpoint issues
// tokens of one hour and answers in 50 ms, and it is down (503, no Retry-After) for five minutes
// inside the first refresh wave. The same fleet runs twice in one run: with the product's schedule
// (DEFAULT_SCHEDULE of dist/token/refresh-schedule.js: a sidecar's first refresh at a random
// moment between half the ratio and the ratio of the lifetime, the later ones at the ratio less up
// to 10 % of it; the backoff cap a quarter of the held token's usable life, at least 30 s) and with
// the schedule before it (EARLIER_SCHEDULE below, given to each token source as its `schedule`:
// every refresh, the first included, at the ratio less up to 10 % of the lifetime, a 30 s cap). Then one proxy with pass-through
// credentials (dist/token/source-cache.js): as many credentials as sidecars, each used every
// 5 minutes, a tenth of them idle after the first hour.
//
// Then the same number of sidecars with one credential sharing a token store (bench/fleet/store.js),
// against the same timeline without the store: fetches per token lifetime for the whole fleet at
// start, in steady state, after a fleet-wide revocation, while the store is down and once it is
// back, and the attempts a throttling token endpoint sees.
//
// Last, real proxies each held to a tenth of a core by a cgroup, sharing a real redis-server
// (bench/fleet/throttled.js, its settings there): what the store timeout must be for a sidecar with
// `resources.limits.cpu: 100m` to keep sharing. It takes root; FLEET_CPU=0 leaves it out.
//
// Settings (environment): FLEET_SIDECARS (10000), FLEET_HOURS (3), FLEET_TOKEN_TTL_S (3600),
// FLEET_OUTAGE_AT_S (2700: inside the first refresh wave, where an outage hurts), FLEET_OUTAGE_S
// (300), FLEET_REFRESH_RATIO (0.8, the default of TOKEN_REFRESH_RATIO), FLEET_SEED (1).
import { TokenFetchError } from '../dist/token/errors.js';
import { BACKOFF_CAP_MS, backoffPolicy, DEFAULT_SCHEDULE } from '../dist/token/refresh-schedule.js';
import { createSourceCache } from '../dist/token/source-cache.js';
import { fetchingSupply } from '../dist/token/token-supply.js';
import { quiet, seeded, sidecar, SimClock } from './fleet/sim.js';
import { fetchesBetween, fleetTimeline } from './fleet/store.js';
import { throttledFleet } from './fleet/throttled.js';

// Ten thousand store clients meet a store that is down about a million times an hour in the
// simulation: an error's stack trace, which no one reads here, would cost most of the run.
Error.stackTraceLimit = 0;

const env = process.env;
const sidecars = Number(env.FLEET_SIDECARS ?? 10_000);
const horizonMs = Number(env.FLEET_HOURS ?? 3) * 3_600_000;
const ttlMs = Number(env.FLEET_TOKEN_TTL_S ?? 3600) * 1000;
const outageAtMs = Number(env.FLEET_OUTAGE_AT_S ?? 2700) * 1000;
const outageMs = Number(env.FLEET_OUTAGE_S ?? 300) * 1000;
const refreshRatio = Number(env.FLEET_REFRESH_RATIO ?? 0.8);
const latencyMs = 50;
const epoch = Date.UTC(2026, 0, 1);

const horizonS = horizonMs / 1000;

/** The token endpoint on `clock`: 50 ms per answer, down with 503 during the outage; counts per second. */
function tokenEndpoint(clock, perSecond, count) {
  return (credential) => {
    const sentAt = clock.now() - epoch;
    perSecond[Math.floor(sentAt / 1000)]++;
    count?.(credential, sentAt);
    const down = sentAt >= outageAtMs && sentAt < outageAtMs + outageMs;
    return new Promise((resolve, reject) => {
      clock.setTimeout(() => {
        if (down) reject(new TokenFetchError('server_error', 'token endpoint answered 503', { status: 503 }));
        else resolve({ accessToken: 't', lifetimeMs: ttlMs });
      }, latencyMs);
    });
  };
}

/** Every 10 simulated seconds after start-up, counts the sources without a valid token. */
function withoutTokenWatch(sources) {
  const ever = new Uint8Array(sources.length);
  let nextCheck = epoch + 60_000;
  return {
    onInstant(at) {
      while (at >= nextCheck) {
        for (let i = 0; i < sources.length; i++) if (sources[i].current() === undefined) ever[i] = 1;
        nextCheck += 10_000;
      }
    },
    count: () => ever.reduce((a, b) => a + b, 0),
  };
}

/**
 * The schedule before the first refresh was spread and the backoff cap grew with the token's life:
 * every refresh, the first included, at the ratio less up to 10 % of the lifetime, a 30 s cap.
 */
const EARLIER_SCHEDULE = {
  refreshOffsetMs: (lifetimeMs, ratio, random) => Math.max(0, lifetimeMs * ratio - random() * 0.1 * lifetimeMs),
  backoffCapMs: () => BACKOFF_CAP_MS,
};

/** One fleet of configured sidecars, each token source on `schedule`. */
async function fleet(schedule) {
  const clock = new SimClock(epoch);
  const random = seeded(Number(env.FLEET_SEED ?? 1));
  const perSecond = new Uint32Array(horizonS + 1);
  const fetchToken = tokenEndpoint(clock, perSecond);
  const sources = [];
  // Started within the same second.
  for (let i = 0; i < sidecars; i++) sources.push(sidecar({ fetchToken, clock, random, refreshRatio, schedule }));
  const watch = withoutTokenWatch(sources);
  await clock.runUntil(epoch + horizonMs, watch.onInstant);
  for (const s of sources) s.stop();
  return { perSecond, without: watch.count() };
}

/**
 * One proxy holding `sidecars` pass-through credentials, each used every 5 minutes; a tenth of
 * them idle after the first hour. Counts fetches per hour for the busy and the idle ones.
 */
async function passthrough() {
  const clock = new SimClock(epoch);
  const random = seeded(Number(env.FLEET_SEED ?? 1) + 1);
  const perSecond = new Uint32Array(horizonS + 1);
  const hours = Math.ceil(horizonS / 3600);
  const byHour = { busy: new Array(hours).fill(0), idle: new Array(hours).fill(0) };
  const isIdle = (clientId) => Number(clientId.slice(1)) % 10 === 0;
  const fetchToken = tokenEndpoint(clock, perSecond, (credential, sentAt) => {
    byHour[isIdle(credential.clientId) ? 'idle' : 'busy'][Math.floor(sentAt / 3_600_000)]++;
  });
  let entries = 0;
  /** When as many credentials were held as are busy (seconds after the start). */
  let allHeldAtS;
  const cache = createSourceCache({
    max: sidecars + 1,
    supplyFor: (_credential, backoff) => fetchingSupply(fetchToken, { clock, backoff, schedule: DEFAULT_SCHEDULE }),
    backoff: backoffPolicy(DEFAULT_SCHEDULE, random),
    clock,
    random,
    refreshRatio,
    waitTimeoutMs: 5000,
    defaultLifetimeMs: 300_000,
    log: quiet,
    observer: {},
    onSize: (n) => {
      entries = n;
      if (allHeldAtS === undefined && n >= sidecars - sidecars / 10) allHeldAtS = (clock.now() - epoch) / 1000;
    },
  });
  const everyMs = 5 * 60_000;
  for (let i = 0; i < sidecars; i++) {
    const credential = { clientId: `c${i}`, clientSecret: `secret-${i}` };
    const idle = isIdle(`c${i}`);
    const use = () => {
      if (idle && clock.now() - epoch >= 3_600_000) return;
      // As a request does: the source for the credentials, then its token.
      const held = cache.authorizerFor(credential);
      if (!(held instanceof Error) && held.authorization() === undefined) held.authorize().catch(() => {});
      clock.setTimeout(use, everyMs);
    };
    // Workspaces call at their own moments: the first use at a random moment of the first 5 minutes.
    clock.setTimeout(use, Math.floor(random() * everyMs));
  }
  await clock.runUntil(epoch + horizonMs);
  const entriesAtEnd = entries;
  cache.stop();
  return { perSecond, byHour, entriesAtEnd, allHeldAtS };
}

/**
 * The fleet with one credential sharing a store, against the same fleet without one: three
 * lifetimes with a fleet-wide revocation in the middle of the second; the store down for the
 * whole second lifetime; the token endpoint throttling across the fleet's first refresh moment
 * (and one sidecar alone with the store under the same throttling: one retry per backoff step).
 */
async function storeFleets() {
  const base = { sidecars, ttlMs, refreshRatio, epoch, latencyMs, seed: Number(env.FLEET_SEED ?? 1) + 2, horizonMs: 3 * ttlMs };
  const revokeAtMs = 1.5 * ttlMs;
  const throttle = { fromMs: 0.69 * ttlMs, forMs: 600_000 };
  const withStore = await fleetTimeline({ ...base, store: true, revokeAtMs });
  const without = await fleetTimeline({ ...base, store: false, revokeAtMs });
  const down = await fleetTimeline({ ...base, store: true, storeDown: { fromMs: ttlMs, forMs: ttlMs } });
  const throttled = await fleetTimeline({ ...base, store: true, horizonMs: ttlMs, throttle });
  const throttledWithout = await fleetTimeline({ ...base, store: false, horizonMs: ttlMs, throttle });
  const lone = await fleetTimeline({ ...base, sidecars: 1, store: true, horizonMs: ttlMs, throttle });
  return { withStore, without, down, throttled, throttledWithout, lone, revokeAtMs, throttle };
}

/** Peak and mean of requests per minute over the hour [hour, hour + 1). */
function hourRate(perSecond, hour) {
  let total = 0;
  let peak = 0;
  for (let m = hour * 60; m < hour * 60 + 60; m++) {
    let n = 0;
    for (let s = m * 60; s < m * 60 + 60 && s < perSecond.length; s++) n += perSecond[s];
    total += n;
    peak = Math.max(peak, n);
  }
  return { total, peak, mean: total / 60 };
}

function between(perSecond, fromS, toS) {
  let n = 0;
  for (let s = fromS; s < toS && s < perSecond.length; s++) n += perSecond[s];
  return n;
}

const started = Date.now();
const legacy = await fleet(EARLIER_SCHEDULE);
const after = await fleet(DEFAULT_SCHEDULE);
const pass = await passthrough();
const shared = await storeFleets();
const simulatedS = ((Date.now() - started) / 1000).toFixed(1);

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const clockTime = (s) => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
const outageFromS = outageAtMs / 1000;
const outageToS = (outageAtMs + outageMs) / 1000;
const lines = [];
lines.push('# Fleet simulation: the token endpoint under a fleet of sidecars', '');
lines.push(
  `${sidecars} sidecars started within 1 s; tokens of ${ttlMs / 1000} s; refresh ratio ${refreshRatio}; ${horizonS / 3600} simulated hours; ` +
    `token endpoint down (503) from ${clockTime(outageFromS)} for ${outageMs / 1000} s. Simulated in ${simulatedS} s. ` +
    'Rates are requests per minute; "before" is the earlier schedule (every refresh at the ratio less up to 10 % of the lifetime, ' +
    'a 30 s backoff cap).',
  '',
);
lines.push('| figure | before | after | target |');
lines.push('|---|--:|--:|---|');
for (let h = 1; h < Math.ceil(horizonS / 3600); h++) {
  const b = hourRate(legacy.perSecond, h);
  const a = hourRate(after.perSecond, h);
  lines.push(
    `| hour ${h + 1}: peak / mean req/min | ${fmt(b.peak / b.mean, 2)} (${b.peak} / ${fmt(b.mean)}) | ${fmt(a.peak / a.mean, 2)} (${a.peak} / ${fmt(a.mean)}) | ≤ 2 |`,
  );
}
const ob = between(legacy.perSecond, outageFromS, outageToS);
const oa = between(after.perSecond, outageFromS, outageToS);
lines.push(`| requests during the outage | ${ob} | ${oa} | ≥ 4× fewer: ${fmt(ob / Math.max(1, oa), 1)}× |`);
lines.push(
  `| requests in the minute after it | ${between(legacy.perSecond, outageToS, outageToS + 60)} | ${between(after.perSecond, outageToS, outageToS + 60)} | |`,
);
lines.push(`| sidecars ever without a valid token (checked every 10 s) | ${legacy.without} | ${after.without} | 0 |`);
lines.push(
  `| fetches per sidecar over ${horizonS / 3600} h | ${fmt(between(legacy.perSecond, 0, horizonS + 1) / sidecars, 2)} | ${fmt(between(after.perSecond, 0, horizonS + 1) / sidecars, 2)} | |`,
);
lines.push('');
lines.push(
  `Pass-through: one proxy, ${sidecars} credentials each used every 5 minutes from a random moment of the first 5, a tenth (${sidecars / 10}) idle after the first hour. ` +
    'New credentials are let in at most 10 a second (docs/forwarding.md, "Pass-through credentials under a flood"), so a credential may be refused at its first uses and held from a later one. Token fetches per hour:',
  '',
);
lines.push('| hour | busy credentials | idle credentials |');
lines.push('|--:|--:|--:|');
for (let h = 0; h < pass.byHour.busy.length; h++) lines.push(`| ${h + 1} | ${pass.byHour.busy[h]} | ${pass.byHour.idle[h]} |`);
lines.push('');
lines.push(
  `Entries held at the end: ${pass.entriesAtEnd} (busy credentials: ${sidecars - sidecars / 10}); every busy credential held from ${pass.allHeldAtS === undefined ? 'never' : `${Math.round(pass.allHeldAtS / 60)} min`}.`,
);
process.stdout.write(lines.join('\n') + '\n');

process.stdout.write(storeTable(shared).join('\n') + '\n');

if (env.FLEET_CPU !== '0') process.stdout.write((await throttledFleet(env)).join('\n') + '\n');

/** The store's figures: fetches per token lifetime for the whole fleet, with the store and without. */
function storeTable(runs) {
  const L = ttlMs;
  const { withStore, without, down, revokeAtMs, throttle } = runs;
  const count = (run, from, to) => fetchesBetween(run.fetchedAt, from, to);
  const revocation = (run) => count(run, revokeAtMs, revokeAtMs + 60_000);
  // Steady state: one fetch a refresh period; lifetimes over the mean period is the rate. The fetch at
  // start, the revocation's, and the period a revocation cuts short are left out.
  const steady = (run) => {
    const side = (t) => (t < revokeAtMs ? 0 : t >= revokeAtMs + 60_000 ? 1 : NaN);
    const at = run.fetchedAt.filter((t) => t >= 60_000 && !Number.isNaN(side(t)));
    const gaps = at.slice(1).flatMap((t, i) => (side(t) === side(at[i]) ? [t - at[i]] : []));
    return gaps.length === 0 ? NaN : L / (gaps.reduce((a, b) => a + b) / gaps.length);
  };
  const throttled = (run) => count(run, throttle.fromMs, throttle.fromMs + throttle.forMs);
  const out = ['', `## With a shared token store`, ''];
  out.push(
    `${sidecars} sidecars with one credential, started within 1 s, each with its own client of one in-memory store, ` +
      `for three lifetimes; figures are token-endpoint fetches for the whole fleet. The gateway revokes the token at 1.5 ` +
      `lifetimes (each sidecar meets its 401 within a second). In a second run the store is down for the whole second ` +
      `lifetime; in a third the token endpoint answers 429 (no Retry-After) for ${throttle.forMs / 1000} s from ` +
      `${throttle.fromMs / L} of the first lifetime, across the fleet's first refresh moment.`,
    '',
  );
  out.push('| figure | without a store | with a store | target |');
  out.push('|---|--:|--:|---|');
  out.push(`| fetches in the first lifetime | ${count(without, 0, L)} | ${count(withStore, 0, L)} | ≤ 2 |`);
  out.push(
    `| fetches per lifetime after it | ${fmt((count(without, L, 3 * L) - revocation(without)) / 2, 0)} | ${fmt(steady(withStore), 2)} | ≤ 1.5 |`,
  );
  out.push(`| fetches in the minute after a fleet-wide revocation | ${revocation(without)} | ${revocation(withStore)} | about 1 |`);
  out.push(`| fetches in a lifetime the store is down | ${count(without, L, 2 * L)} | ${count(down, L, 2 * L)} | no more than without |`);
  out.push(`| fetches in the first minute after it is back | | ${count(down, 2 * L, 2 * L + 60_000)} | |`);
  out.push(`| fetches in the rest of that lifetime | | ${count(down, 2 * L + 60_000, 3 * L)} | ≤ 1.5 |`);
  out.push(
    `| attempts while the token endpoint throttles | ${throttled(runs.throttledWithout)} | ${throttled(runs.throttled)} | one sidecar's: ${throttled(runs.lone)} |`,
  );
  out.push(`| store commands per sidecar per lifetime | | ${fmt(withStore.storeCommands / sidecars / 3, 1)} | |`);
  return out;
}
