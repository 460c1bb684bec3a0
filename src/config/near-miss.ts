import { SETTINGS, type Setting } from './config.js';

/** A name's words in upper case: `listen_port`, `listenPort` and `LISTEN-PORT` all give LISTEN, PORT. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toUpperCase()
    .split(/[^A-Z0-9]+/)
    .filter((w) => w !== '');
}

/** The three rows of the distance, kept between calls and grown to the longest name met. */
let rows = [new Int32Array(64), new Int32Array(64), new Int32Array(64)] as const;

/**
 * Edit distance counting a swap of two neighbouring letters as one edit (optimal string
 * alignment), or `limit + 1` as soon as it is known to be over `limit`. It runs for every
 * variable of the environment against every setting at start (hundreds in a pod with service
 * links), so only the cells within `limit` of the diagonal are computed, a name stops at the first
 * row that is over the limit everywhere, and the rows are reused: a full table per pair grew the
 * young generation, and enough calls to tier it up to the optimizing compiler paged megabytes of
 * it into an idle proxy.
 */
export function editDistance(a: string, b: string, limit = Math.max(a.length, b.length)): number {
  const over = limit + 1;
  const n = b.length;
  if (Math.abs(a.length - n) > limit) return over;
  if (rows[0].length <= n) rows = [new Int32Array(n + 1), new Int32Array(n + 1), new Int32Array(n + 1)];
  let [before, previous, current] = rows;
  for (let j = 0; j <= n; j++) previous[j] = Math.min(j, over);
  for (let i = 1; i <= a.length; i++) {
    const from = Math.max(1, i - limit);
    const to = Math.min(n, i + limit);
    current[0] = Math.min(i, over);
    current[from - 1] = from > 1 ? over : current[0];
    let rowBest = from > 1 ? over : current[0];
    for (let j = from; j <= to; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      current[j] = Math.min(best, over);
      rowBest = Math.min(rowBest, current[j]!);
    }
    if (to < n) current[to + 1] = over;
    if (rowBest > limit) return over;
    [before, previous, current] = [previous, current, before];
  }
  return previous[n]!;
}

/** Each setting's words, sorted: the same words in another order are a slip too. */
const SORTED_WORDS = SETTINGS.map((s) => s.env.split('_').sort().join('_'));

/**
 * How far a name may be from a setting's and still count as a slip: one edit, two for the long
 * names. Short names stay at one, so that `FTP_PROXY` is not taken for `HTTP_PROXY`.
 */
function allowed(setting: string): number {
  return setting.length >= 12 ? 2 : 1;
}

/**
 * The setting a name most resembles, when it looks like a slip of one: the same words in
 * another order or another case (`PORT_LISTEN`, `listen_port`), or a small edit distance
 * (`LISTEN_PROT`, `CLIENT_SECERT_FILE`). Undefined when nothing is close. Ties go to the
 * setting listed first.
 */
export function nearestSetting(name: string): Setting | undefined {
  const mine = words(name);
  const joined = mine.join('_');
  const sorted = [...mine].sort().join('_');
  let best: Setting | undefined;
  let bestDistance = Infinity;
  for (let k = 0; k < SETTINGS.length; k++) {
    const s = SETTINGS[k]!;
    if (joined === s.env || sorted === SORTED_WORDS[k]) return s;
    // The distance is at least the difference in length: most names stop here.
    if (Math.abs(joined.length - s.env.length) > allowed(s.env)) continue;
    const distance = editDistance(joined, s.env, allowed(s.env));
    if (distance <= allowed(s.env) && distance < bestDistance) {
      best = s;
      bestDistance = distance;
    }
  }
  return best;
}

/** An environment variable that looks like a misspelt setting, and the setting it resembles. */
export interface NearMiss {
  readonly variable: string;
  readonly setting: string;
}

/**
 * The environment variables that are not read but resemble a setting that is. Only names are
 * looked at, never values. The variables npm sets for a script (`npm_*`) are left alone.
 */
export function nearMissVariables(env: Readonly<Record<string, string | undefined>>): NearMiss[] {
  const read = new Set(SETTINGS.flatMap((s) => (s.lowerCaseEnv ? [s.env, s.env.toLowerCase()] : [s.env])));
  const found: NearMiss[] = [];
  for (const variable of Object.keys(env).sort()) {
    if (read.has(variable) || variable.startsWith('npm_')) continue;
    const near = nearestSetting(variable);
    if (near !== undefined) found.push({ variable, setting: near.env });
  }
  return found;
}

/** The warning for one near miss, naming both; never the variable's value. */
export function nearMissWarning(miss: NearMiss): string {
  return `${miss.variable} is not a setting and is ignored; did you mean ${miss.setting}?`;
}
