/** What the benchmarks share: where the project is, the image's NODE_OPTIONS and allocator, free loopback ports. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The ENV of the Dockerfile's final stage, name to value (quotes and line continuations read). */
function imageEnv() {
  let dockerfile;
  try {
    dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  } catch {
    return new Map();
  }
  const finalStage = dockerfile
    .split(/^FROM\s/m)
    .at(-1)
    .replace(/\\\n/g, ' ');
  const vars = new Map();
  for (const line of finalStage.split('\n')) {
    if (!/^\s*ENV\s/.test(line)) continue;
    for (const m of line.replace(/^\s*ENV\s+/, '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"]*)"|(\S*))/g))
      vars.set(m[1], m[2] ?? m[3] ?? '');
  }
  return vars;
}

/** The NODE_OPTIONS the Dockerfile ships, so the product is measured as the image runs it. */
export function imageNodeOptions() {
  return imageEnv().get('NODE_OPTIONS') ?? '';
}

/** Whether the dynamic linker finds a library by its bare name (as LD_PRELOAD=name looks it up). */
function libraryFound(name) {
  const listed = spawnSync('ldconfig', ['-p'], { encoding: 'utf8' });
  return listed.status === 0 && listed.stdout.split('\n').some((l) => l.trim().startsWith(`${name} `));
}

/**
 * The image's allocator settings (LD_PRELOAD of jemalloc and its MALLOC_CONF), so the product is
 * measured with the allocator it ships with. BENCH_PRODUCT_ALLOCATOR=glibc leaves them out,
 * BENCH_PRODUCT_MALLOC_CONF replaces the image's MALLOC_CONF; a host without the library (Debian:
 * libjemalloc2) measures glibc's malloc and says so.
 */
export function imageAllocatorEnv(env = process.env) {
  const vars = imageEnv();
  const preload = vars.get('LD_PRELOAD');
  if (preload === undefined) return { env: {}, description: 'glibc malloc (the image sets no LD_PRELOAD)' };
  if (env.BENCH_PRODUCT_ALLOCATOR === 'glibc') return { env: {}, description: 'glibc malloc (BENCH_PRODUCT_ALLOCATOR=glibc)' };
  if (!libraryFound(preload)) return { env: {}, description: `glibc malloc: ${preload} is not installed here (Debian: libjemalloc2)` };
  // BENCH_PRODUCT_MALLOC_CONF tries other jemalloc settings than the image's (a thread cache, say).
  const conf = env.BENCH_PRODUCT_MALLOC_CONF ?? vars.get('MALLOC_CONF');
  return {
    env: { LD_PRELOAD: preload, ...(conf ? { MALLOC_CONF: conf } : {}) },
    description: `LD_PRELOAD=${preload}${conf ? ` MALLOC_CONF=${conf}` : ''}`,
  };
}

/** A loopback port free at the time of asking. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once `check` answers true (a throw counts as not yet), asking every 20 ms; rejects naming `what` after `timeoutMs`. */
export async function until(check, what, timeoutMs = 15_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not there yet
    }
    if (Date.now() > end) throw new Error(`${what} not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
