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

/** Edit distance counting a swap of two neighbouring letters as one edit (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

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
  for (const s of SETTINGS) {
    const theirs = s.env.split('_');
    if (joined === s.env || sorted === [...theirs].sort().join('_')) return s;
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
