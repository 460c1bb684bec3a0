// A CPU limit for a process and its threads, as a pod's `resources.limits.cpu` sets one: a cgroup
// whose CFS quota is a share of one core per 100 ms period. On cgroup v1 (`cpu.cfs_quota_us` and
// `cpu.cfs_period_us` under /sys/fs/cgroup/cpu), or on v2 (`cpu.max`, the cpu controller enabled
// for the root's children). Making one takes root; `npm run bench:fleet` and the store's test under
// a CPU limit (test/integration/token-store-cpu-limit.test.ts) use it.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PERIOD_US = 100_000;
const V1 = '/sys/fs/cgroup/cpu';
const V2 = '/sys/fs/cgroup';

/**
 * Where a CPU limit can be made here, or why none can: not root, or no cpu controller that can be
 * written. Returns `{ root, version }` or `{ reason }`.
 */
export function cpuController() {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return { reason: 'not root' };
  if (existsSync(join(V1, 'cpu.cfs_quota_us'))) return { root: V1, version: 1 };
  const controllers = (path) => {
    try {
      return readFileSync(path, 'utf8').split(/\s+/);
    } catch {
      return [];
    }
  };
  if (controllers(join(V2, 'cgroup.controllers')).includes('cpu')) return { root: V2, version: 2 };
  return { reason: 'no cpu cgroup controller (neither cgroup v1 cpu.cfs_quota_us nor v2 cpu.max)' };
}

/**
 * Makes a cgroup named `name` held to `share` of one core (0.1: a tenth, as `limits.cpu: 100m`).
 * Returns `{ wrap, remove }`: `wrap` is a command prefix that moves the command into the cgroup
 * before it runs (`[...wrap, node, ...]`); `remove()` deletes the cgroup once its processes have
 * exited. Or `{ reason }` when none can be made.
 */
export function cpuLimit(name, share = 0.1) {
  const controller = cpuController();
  if (controller.reason !== undefined) return { reason: controller.reason };
  const dir = join(controller.root, name);
  const quotaUs = Math.max(1_000, Math.round(share * PERIOD_US));
  try {
    if (controller.version === 2) {
      const control = join(controller.root, 'cgroup.subtree_control');
      if (!readFileSync(control, 'utf8').split(/\s+/).includes('cpu')) writeFileSync(control, '+cpu');
    }
    mkdirSync(dir, { recursive: true });
    if (controller.version === 1) {
      writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
      writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
    } else {
      writeFileSync(join(dir, 'cpu.max'), `${quotaUs} ${PERIOD_US}`);
    }
  } catch (err) {
    return { reason: `the cpu controller at ${controller.root} cannot be written (${err.code ?? err.message})` };
  }
  return {
    dir,
    // The shell moves itself into the cgroup, then becomes the command: the process and every
    // thread it starts (scrypt's among them) share the quota.
    wrap: ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"', join(dir, 'cgroup.procs')],
    remove() {
      try {
        rmdirSync(dir);
      } catch {
        // Still in use by a process that has not exited yet: left for the system to tidy.
      }
    },
  };
}
