/**
 * The container's memory limit and the process's memory as the kernel counts it for the kill,
 * read from the cgroup the process is in: cgroup v2 (`memory.max`, `memory.current`), else v1
 * (`memory.limit_in_bytes`, `memory.usage_in_bytes`). Both subtract the inactive file pages
 * (`inactive_file`; v1 `total_inactive_file`): page cache the kernel reclaims before it kills, as
 * the kubelet counts a container's working set. Without a cgroup limit, the limit is unknown and
 * memory is the process's resident set.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the limit came from, for the log line at start. */
export type LimitSource = 'cgroup v2' | 'cgroup v1';

export interface ContainerMemory {
  /** The cgroup's memory limit in bytes, or undefined when it has none (or none could be read). */
  readonly limitBytes: number | undefined;
  readonly source: LimitSource | undefined;
  /**
   * The cgroup's memory less its inactive file pages, when the cgroup has a limit; undefined
   * otherwise, or when the files cannot be read (then resident memory is what counts).
   */
  usageBytes(): number | undefined;
  /**
   * The kernel's socket buffers the cgroup is charged for (cgroup v2's `sock` in `memory.stat`,
   * part of `memory.current`); undefined without a limit, under cgroup v1 (whose usage leaves them
   * out) or when it cannot be read.
   */
  socketBytes(): number | undefined;
}

/** A limit this large is "none": cgroup v1 writes the largest page-aligned 63-bit value. */
const NO_LIMIT = 2 ** 60;

/**
 * Reads the cgroup of this process under `root` (`/` in production; tests give a directory of
 * fixture files laid out as `proc/self/cgroup` and `sys/fs/cgroup/...`).
 */
export function readContainerMemory(root = '/'): ContainerMemory {
  const lines = readText(join(root, 'proc/self/cgroup'))?.split('\n') ?? [];
  for (const reader of [v2, v1]) {
    const found = reader(root, lines);
    if (found !== undefined) return found;
  }
  return NONE;
}

const NONE: ContainerMemory = { limitBytes: undefined, source: undefined, usageBytes: () => undefined, socketBytes: () => undefined };

/** cgroup v2: the line `0::/path`; the smallest `memory.max` from the cgroup up to the mount's root. */
function v2(root: string, lines: readonly string[]): ContainerMemory | undefined {
  const path = lines.find((l) => l.startsWith('0::'))?.slice(3);
  if (path === undefined) return undefined;
  const mount = join(root, 'sys/fs/cgroup');
  const dir = cgroupDir(mount, path, 'memory.max');
  if (dir === undefined) return undefined;
  let limit: number | undefined;
  // Inside a cgroup namespace the container's cgroup is the mount's root and its parents are not
  // visible; without one, a parent (the pod's cgroup) may hold a tighter limit than the container's.
  for (let at = dir; at.startsWith(mount); at = join(at, '..')) {
    const max = readNumber(join(at, 'memory.max'));
    if (max !== undefined && (limit === undefined || max < limit)) limit = max;
    if (at === mount) break;
  }
  return withUsage(
    limit,
    'cgroup v2',
    () => {
      const current = readNumber(join(dir, 'memory.current'));
      return current === undefined ? undefined : current - (statField(join(dir, 'memory.stat'), 'inactive_file') ?? 0);
    },
    () => statField(join(dir, 'memory.stat'), 'sock'),
  );
}

/** cgroup v1: the memory controller's line; the cgroup's limit, or its hierarchy's when tighter. */
function v1(root: string, lines: readonly string[]): ContainerMemory | undefined {
  const line = lines.find((l) => l.split(':')[1]?.split(',').includes('memory'));
  if (line === undefined) return undefined;
  const path = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1);
  const dir = cgroupDir(join(root, 'sys/fs/cgroup/memory'), path, 'memory.limit_in_bytes');
  if (dir === undefined) return undefined;
  const own = readNumber(join(dir, 'memory.limit_in_bytes'));
  const hierarchical = statField(join(dir, 'memory.stat'), 'hierarchical_memory_limit');
  const limit = own !== undefined && hierarchical !== undefined ? Math.min(own, hierarchical) : (own ?? hierarchical);
  return withUsage(limit, 'cgroup v1', () => {
    const usage = readNumber(join(dir, 'memory.usage_in_bytes'));
    return usage === undefined ? undefined : usage - (statField(join(dir, 'memory.stat'), 'total_inactive_file') ?? 0);
  });
}

/**
 * Whether this process's malloc keeps the memory it frees for reuse rather than giving it back to
 * the system: glibc's does (its arenas shrink only from their top), jemalloc's, which the image
 * preloads, returns freed pages within seconds. Undefined where `/proc/self/maps` cannot say.
 */
export function mallocKeepsFreedMemory(root = '/'): boolean | undefined {
  const maps = readText(join(root, 'proc/self/maps'));
  return maps === undefined ? undefined : !maps.includes('libjemalloc');
}

function withUsage(
  limit: number | undefined,
  source: LimitSource,
  usage: () => number | undefined,
  sockets: () => number | undefined = () => undefined,
): ContainerMemory {
  if (limit === undefined || limit >= NO_LIMIT) return NONE;
  return { limitBytes: limit, source, usageBytes: usage, socketBytes: sockets };
}

/**
 * The cgroup's directory: the mount joined with the path from `/proc/self/cgroup`, or the mount's
 * root when that is not there (a container whose cgroup is mounted as the root, as Docker does
 * without a cgroup namespace); undefined when neither has `file`.
 */
function cgroupDir(mount: string, path: string, file: string): string | undefined {
  for (const dir of [join(mount, path), mount]) if (readText(join(dir, file)) !== undefined) return dir;
  return undefined;
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** A file holding one number (`max` and anything unreadable: undefined). */
function readNumber(file: string): number | undefined {
  const text = readText(file)?.trim();
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

/** One `name value` line of a `memory.stat` file. */
function statField(file: string, name: string): number | undefined {
  const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(readText(file) ?? '');
  return match ? Number(match[1]) : undefined;
}
