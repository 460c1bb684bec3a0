import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Host } from '../../bench/run/settings.js';
import { readSettings, settingsHelp, settingsMarkdown, SETTINGS } from '../../bench/run/settings.js';

/** A machine without wrk or nginx, two processors, where every file exists; the image's settings fixed. */
function host(found: string[] = []): Host {
  return {
    hasProgram: (name) => found.includes(name),
    processors: 2,
    exists: () => true,
    imageNodeOptions: () => '--max-semi-space-size=16',
    imageAllocatorEnv: (env) => {
      const preload: Record<string, string> = env.BENCH_PRODUCT_ALLOCATOR === 'glibc' ? {} : { LD_PRELOAD: 'libjemalloc.so.2' };
      return { env: preload, description: preload.LD_PRELOAD ?? 'glibc malloc' };
    },
  };
}

/** The table under "### Settings" in bench/README.md, from its header row to the blank line after it. */
function readmeTable(): string {
  const readme = readFileSync(join(import.meta.dirname, '../../bench/README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Settings'));
  const lines = section.split('\n');
  const start = lines.findIndex((line) => line.startsWith('| variable |'));
  const end = lines.indexOf('', start);
  return lines.slice(start, end).join('\n');
}

describe('the settings of npm run bench', () => {
  it('are listed in bench/README.md exactly as the table bench/run.js reads them from', () => {
    expect(readmeTable()).toBe(settingsMarkdown());
  });

  it('are each named in the help', () => {
    const help = settingsHelp();
    for (const { name } of SETTINGS) expect(help).toContain(`  ${name}`);
  });

  it('default to 3 rounds of 5 s after 2 s, the default scenarios, and the load and upstream found on PATH', () => {
    const settings = readSettings({}, host(['wrk']));
    expect(settings).toMatchObject({ durationS: 5, rounds: 3, warmupS: 2, load: 'wrk', upstream: 'node', pin: false, profile: false });
    expect(settings.scenarios).toContain('get-1k');
    expect(settings.scenarios).not.toContain('get-1k-passthrough');
    expect(settings.productNodeOptions).toBe('--max-semi-space-size=16');
    expect(settings.productAllocator.env).toEqual({ LD_PRELOAD: 'libjemalloc.so.2' });
    expect(settings.beforeMain).toBeUndefined();
    expect(Object.isFrozen(settings)).toBe(true);
  });

  it('run the product’s own build as "before" when only BENCH_BEFORE_ENV is given, with its pairs', () => {
    const settings = readSettings({ BENCH_BEFORE_ENV: 'LD_PRELOAD= NODE_OPTIONS=--jitless' }, host());
    expect(settings.beforeMain).toMatch(/dist\/main\.js$/);
    expect(settings.beforeEnv).toEqual({ LD_PRELOAD: '', NODE_OPTIONS: '--jitless' });
  });

  it('report every bad value at once, each naming its variable', () => {
    const env = {
      BENCH_ROUNDS: '1.5',
      BENCH_DURATION_S: '0',
      BENCH_SCENARIOS: 'get-1k,get-2k',
      BENCH_LOAD: 'wrk',
      BENCH_PIN: 'yes',
      BENCH_BEFORE_ENV: 'NODE_OPTIONS',
    };
    let message = '';
    try {
      readSettings(env, host());
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('BENCH_ROUNDS must be a whole number above 0 (got "1.5")');
    expect(message).toContain('BENCH_DURATION_S must be a number above 0 (got "0")');
    expect(message).toContain('BENCH_SCENARIOS unknown scenario get-2k');
    expect(message).toContain('BENCH_LOAD wrk is not on PATH');
    expect(message).toContain('BENCH_PIN must be 1 or 0 (got "yes")');
    expect(message).toContain('BENCH_BEFORE_ENV "NODE_OPTIONS" is not NAME=value');
  });
});
