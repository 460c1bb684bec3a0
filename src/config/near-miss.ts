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

/**
 * Edit distance counting a swap of two neighbouring letters as one edit (optimal string
 * alignment), in three rows rather than a whole table: it runs for every variable of the
 * environment against every setting at start, and a table per pair grew the young generation,
 * and with it the resident memory of an idle proxy, by megabytes.
 */
export function editDistance(a: string, b: string): number {
  let before = new Int32Array(b.length + 1);
  let previous = new Int32Array(b.length + 1);
  let current = new Int32Array(b.length + 1);
  for (let j = 0; j <= b.length; j++) previous[j] = j;
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      current[j] = best;
    }
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length]!;
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
    const distance = editDistance(joined, s.env);
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
