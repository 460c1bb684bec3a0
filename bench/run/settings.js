// The settings of `npm run bench`, read from the environment: one row each, with its default and
// its meaning. `node bench/run.js --help` prints them, bench/README.md's table ("Settings") is
// the same rows (a unit test holds it to them), and readSettings() reports every problem at once.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { imageAllocatorEnv, imageNodeOptions, root } from '../processes.js';
import { SCENARIOS, defaultScenarioNames } from './scenarios.js';

function positive(raw, fallback, { integer = false, zero = false } = {}) {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < 0 || (n === 0 && !zero))
    throw new Error(`must be a ${integer ? 'whole ' : ''}number ${zero ? 'of 0 or more' : 'above 0'} (got "${raw}")`);
  return n;
}

function flag(raw) {
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new Error(`must be 1 or 0 (got "${raw}")`);
}

/** One of `choices`, by default the first whose program is on PATH (else the last). */
function program(raw, choices, host) {
  if (raw === undefined || raw === '') return choices.find((c) => c.program && host.hasProgram(c.program))?.name ?? choices.at(-1).name;
  const choice = choices.find((c) => c.name === raw);
  if (!choice) throw new Error(`must be ${choices.map((c) => c.name).join(' or ')} (got "${raw}")`);
  if (choice.program && !host.hasProgram(choice.program)) throw new Error(`${choice.program} is not on PATH`);
  return raw;
}

/** `NAME=value NAME2=` → { NAME: 'value', NAME2: '' } (an empty value unsets LD_PRELOAD, say). */
function pairs(raw) {
  const words = (raw ?? '').split(/\s+/).filter(Boolean);
  const wrong = words.filter((pair) => pair.indexOf('=') < 1);
  if (wrong.length) throw new Error(`${wrong.map((w) => `"${w}"`).join(', ')} ${wrong.length > 1 ? 'are' : 'is'} not NAME=value`);
  return Object.fromEntries(words.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

const optional = () => Object.keys(SCENARIOS).filter((name) => SCENARIOS[name].optional);

/**
 * The settings, one row each: `key` in the settings object, `default` and `meaning` as the help and
 * the README print them (Markdown), `read(raw, { env, host })` the value from the variable's text.
 * A row without `key` is read by another's (BENCH_PRODUCT_MALLOC_CONF, with the allocator).
 */
export const SETTINGS = [
  {
    name: 'BENCH_DURATION_S',
    key: 'durationS',
    default: '5',
    meaning: 'seconds per round',
    read: (raw) => positive(raw, 5),
  },
  { name: 'BENCH_ROUNDS', key: 'rounds', default: '3', meaning: 'rounds per scenario', read: (raw) => positive(raw, 3, { integer: true }) },
  {
    name: 'BENCH_WARMUP_S',
    key: 'warmupS',
    default: '2',
    meaning: 'warm-up per candidate and scenario',
    read: (raw) => positive(raw, 2, { zero: true }),
  },
  {
    name: 'BENCH_SCENARIOS',
    key: 'scenarios',
    default: () => `\`${defaultScenarioNames().join(',')}\``,
    meaning: () =>
      `also ${optional()
        .map((name) => `\`${name}\``)
        .join(', ')}`,
    read: (raw) => {
      if (raw === undefined) return defaultScenarioNames();
      const names = raw.split(',').filter(Boolean);
      const unknown = names.filter((name) => !SCENARIOS[name]);
      if (unknown.length || names.length === 0)
        throw new Error(`unknown scenario ${unknown.join(', ') || '(none given)'} (known: ${Object.keys(SCENARIOS).join(', ')})`);
      return names;
    },
  },
  {
    name: 'BENCH_LOAD',
    key: 'load',
    default: '`wrk` if found',
    meaning: '`wrk` or `autocannon`',
    read: (raw, { host }) => program(raw, [{ name: 'wrk', program: 'wrk' }, { name: 'autocannon' }], host),
  },
  {
    name: 'BENCH_UPSTREAM',
    key: 'upstream',
    default: '`nginx` if found',
    meaning: '`nginx` or `node`',
    read: (raw, { host }) => program(raw, [{ name: 'nginx', program: 'nginx' }, { name: 'node' }], host),
  },
  {
    name: 'BENCH_NODE_OPTIONS',
    key: 'nodeFlags',
    default: '',
    meaning: 'extra node flags for every candidate, e.g. `--max-semi-space-size=16`',
    read: (raw) => (raw ?? '').split(/\s+/).filter(Boolean),
  },
  {
    name: 'BENCH_PRODUCT_NODE_OPTIONS',
    key: 'productNodeOptions',
    default: "the image's",
    meaning: '`NODE_OPTIONS` for the product alone; empty for plain Node',
    read: (raw, { host }) => raw ?? host.imageNodeOptions(),
  },
  {
    name: 'BENCH_PRODUCT_ALLOCATOR',
    key: 'productAllocator',
    default: "the image's",
    meaning:
      "`glibc` runs the product without the image's `LD_PRELOAD` of jemalloc (which is used only where this host has " +
      '`libjemalloc.so.2`; the report says which); also read by `bench:footprint` and `soak`',
    read: (raw, { env, host }) => {
      if (raw !== undefined && raw !== '' && raw !== 'glibc') throw new Error(`must be glibc, or unset for the image's (got "${raw}")`);
      return host.imageAllocatorEnv(env);
    },
  },
  {
    name: 'BENCH_PROFILE',
    key: 'profile',
    default: '',
    meaning: '`1`: each candidate writes a CPU profile to `bench/results/profiles/<candidate>/`',
    read: flag,
  },
  {
    name: 'BENCH_PRODUCT_MALLOC_CONF',
    default: "the image's",
    meaning:
      "jemalloc's `MALLOC_CONF` for the product instead of the image's (e.g. with a thread cache); also read by " +
      '`bench:footprint` and `soak`',
  },
  {
    name: 'BENCH_BEFORE',
    key: 'beforeMain',
    default: '',
    meaning:
      'the `dist/main.js` of another build of the product, run beside it as a fourth candidate, `before`, exactly as the ' +
      'product is run (its own client id at the mock)',
    read: (raw, { env, host }) => {
      if (!raw) return env.BENCH_BEFORE_ENV ? join(root, 'dist/main.js') : undefined;
      const main = resolve(raw);
      if (!host.exists(main)) throw new Error(`${main} does not exist (give a build's dist/main.js)`);
      return main;
    },
  },
  {
    name: 'BENCH_BEFORE_ENV',
    key: 'beforeEnv',
    default: '',
    meaning:
      "`NAME=value ...` set for `before` alone, on top of the product's environment: the same build under other settings in " +
      "one run (`LD_PRELOAD= MALLOC_CONF=` for glibc's malloc, `NODE_OPTIONS=` for V8's defaults); without `BENCH_BEFORE`, " +
      "`before` is the product's own build",
    read: pairs,
  },
  {
    name: 'BENCH_PIN',
    key: 'pin',
    default: '',
    meaning:
      '`1`: the proxies run on processor 1, wrk and the upstream on processor 0 (`taskset`), so a candidate never shares its ' +
      'processor with the load it is measured under; needs two processors',
    read: (raw, { host }) => {
      const pin = flag(raw);
      if (pin && host.processors < 2) throw new Error(`needs two processors (this machine has ${host.processors})`);
      return pin;
    },
  },
];

const text = (field) => (typeof field === 'function' ? field() : field);

/**
 * The settings from the environment, frozen; every problem reported at once, each naming its
 * variable.
 *
 * @param env the environment (process.env)
 * @param host what the defaults depend on: `{ hasProgram(name), processors, exists(path),
 *   imageNodeOptions(), imageAllocatorEnv(env) }`
 */
export function readSettings(env, host) {
  const settings = {};
  const problems = [];
  for (const row of SETTINGS) {
    if (!row.key) continue;
    try {
      settings[row.key] = row.read(env[row.name], { env, host });
    } catch (err) {
      problems.push(`${row.name} ${err.message}`);
    }
  }
  if (problems.length) throw new Error(`bad settings (node bench/run.js --help lists them):\n  ${problems.join('\n  ')}`);
  return Object.freeze(settings);
}

/** The host readSettings() asks, this machine's. */
export function thisHost() {
  return {
    hasProgram: (name) => spawnSync(name, ['-v']).error === undefined,
    processors: cpus().length,
    exists: existsSync,
    imageNodeOptions,
    imageAllocatorEnv,
  };
}

/** The settings as bench/README.md's table. */
export function settingsMarkdown() {
  const row = (cells) => `|${cells.map((cell) => (cell ? ` ${cell} ` : ' ')).join('|')}|`;
  const rows = SETTINGS.map((setting) => row([`\`${setting.name}\``, text(setting.default), text(setting.meaning)]));
  return [row(['variable', 'default', '']), '|---|---|---|', ...rows].join('\n');
}

/** Words in lines of at most `width` characters (a longer word on a line of its own). */
function wrap(words, width) {
  const lines = [];
  for (const word of words.split(' ')) {
    if (lines.length && lines.at(-1).length + 1 + word.length <= width) lines[lines.length - 1] += ` ${word}`;
    else lines.push(word);
  }
  return lines;
}

/** The settings as `node bench/run.js --help` prints them. */
export function settingsHelp() {
  const plain = (s) => s.replaceAll('`', '');
  const rows = SETTINGS.map((row) => {
    const fallback = text(row.default) ? ` (default: ${plain(text(row.default))})` : '';
    return [`  ${row.name}${fallback}`, ...wrap(plain(text(row.meaning)), 94).map((line) => `      ${line}`)].join('\n');
  });
  return [
    'npm run bench: what the proxy costs per request, beside two baselines, in one run (bench/README.md).',
    '',
    'Settings, in the environment:',
    ...rows,
    '',
  ].join('\n');
}
