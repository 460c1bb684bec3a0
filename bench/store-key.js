// node bench/store-key.js (after npm run build): what deriving a token store key costs a proxy,
// for the scrypt cost the store uses (marked) and its neighbours: CPU per derivation, the resident
// memory it passes through (VmHWM over the baseline), and what is left resident after eight
// derivations in a row (pass-through credentials derive one each), under glibc's malloc and under
// the image's jemalloc. Each measure runs in a fresh process.
// Settings (environment): STORE_KEY_RUNS (8), STORE_KEY_LOG2N (13,14,15,16).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { scrypt } from 'node:crypto';
import { SCRYPT } from '../dist/store/slot-key.js';
import { imageAllocatorEnv } from './processes.js';

const runs = Number(process.env.STORE_KEY_RUNS ?? 8);
const sizes = (process.env.STORE_KEY_LOG2N ?? '13,14,15,16').split(',').map(Number);

if (process.argv[2] === 'child') {
  const N = 2 ** Number(process.argv[3]);
  const { r, p } = SCRYPT;
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
  const base = kb('VmRSS');
  const cpu = process.cpuUsage();
  let firstSpike;
  for (let i = 0; i < runs; i++) {
    await new Promise((resolve, reject) =>
      scrypt(`secret-${i}`, 'token_url=... client_id=...', 32, { N, r, p, maxmem: 128 * N * r + 1024 * 1024 }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    firstSpike ??= kb('VmHWM') - base;
  }
  const used = process.cpuUsage(cpu);
  await new Promise((resolve) => setTimeout(resolve, 200));
  process.stdout.write(JSON.stringify({ cpuMs: (used.user + used.system) / 1000 / runs, spikeMb: firstSpike, leftMb: kb('VmRSS') - base }));
} else {
  const allocators = [
    { name: 'glibc', env: {} },
    { name: 'jemalloc (the image)', env: imageAllocatorEnv(process.env).env },
  ];
  const lines = [
    `scrypt r=${SCRYPT.r} p=${SCRYPT.p} on Node ${process.version}, ${runs} derivations in a row each; the store uses N=2^${Math.log2(SCRYPT.N)}`,
    '',
    '| N | memory | allocator | CPU per derivation | RSS spike (first) | RSS left after all |',
    '|---|---|---|---|---|---|',
  ];
  for (const log2n of sizes) {
    for (const a of allocators) {
      const child = spawnSync(process.execPath, [new URL(import.meta.url).pathname, 'child', String(log2n)], {
        env: { ...process.env, ...a.env, STORE_KEY_RUNS: String(runs) },
        encoding: 'utf8',
      });
      if (child.status !== 0) throw new Error(child.stderr);
      const m = JSON.parse(child.stdout);
      const mark = 2 ** log2n === SCRYPT.N ? ' (the store)' : '';
      lines.push(
        `| 2^${log2n}${mark} | ${(128 * 2 ** log2n * SCRYPT.r) / 2 ** 20} MiB | ${a.name} | ${m.cpuMs.toFixed(1)} ms | ${m.spikeMb.toFixed(1)} MB | ${m.leftMb.toFixed(1)} MB |`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
