import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readContainerMemory } from '../../src/overload/memory-limit.js';

const MB = 1024 * 1024;
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A fake root holding `files` (paths relative to it, as under `/`). */
function fakeRoot(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'cgroup-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const v2Stat = (inactiveFile: number, sock = 4096): string =>
  `anon 1000\nfile 5000\nsock ${sock}\nactive_file 3000\ninactive_file ${inactiveFile}\nslab 10\n`;
const v1Stat = (limit: number, inactiveFile: number): string =>
  `cache 5000\nrss 1000\ninactive_file 1\nhierarchical_memory_limit ${limit}\ntotal_rss 1000\ntotal_inactive_file ${inactiveFile}\n`;
const UNLIMITED_V1 = '9223372036854771712';

describe("the container's memory limit", () => {
  it('reads cgroup v2 inside a cgroup namespace: memory.max, and memory.current less the inactive file pages', () => {
    const root = fakeRoot({
      'proc/self/cgroup': '0::/\n',
      'sys/fs/cgroup/memory.max': `${256 * MB}\n`,
      'sys/fs/cgroup/memory.current': `${120 * MB}\n`,
      'sys/fs/cgroup/memory.stat': v2Stat(20 * MB),
    });
    const memory = readContainerMemory(root);
    expect(memory).toMatchObject({ limitBytes: 256 * MB, source: 'cgroup v2' });
    expect(memory.usageBytes()).toBe(100 * MB);
    expect(memory.socketBytes()).toBe(4096);
  });

  it("reads cgroup v2 at the process's own path, and takes a parent's limit when it is tighter", () => {
    const root = fakeRoot({
      'proc/self/cgroup': '0::/kubepods/pod1/ctr\n',
      'sys/fs/cgroup/kubepods/pod1/memory.max': `${192 * MB}\n`,
      'sys/fs/cgroup/kubepods/pod1/ctr/memory.max': `${256 * MB}\n`,
      'sys/fs/cgroup/kubepods/pod1/ctr/memory.current': `${50 * MB}\n`,
      'sys/fs/cgroup/kubepods/pod1/ctr/memory.stat': v2Stat(0),
      'sys/fs/cgroup/kubepods/memory.max': 'max\n',
    });
    const memory = readContainerMemory(root);
    expect(memory.limitBytes).toBe(192 * MB);
    expect(memory.usageBytes()).toBe(50 * MB);
  });

  it('finds no limit in a cgroup v2 whose memory.max is max', () => {
    const root = fakeRoot({ 'proc/self/cgroup': '0::/\n', 'sys/fs/cgroup/memory.max': 'max\n', 'sys/fs/cgroup/memory.current': '1000\n' });
    const memory = readContainerMemory(root);
    expect(memory).toMatchObject({ limitBytes: undefined, source: undefined });
    expect(memory.usageBytes()).toBeUndefined();
  });

  it('reads cgroup v1 when there is no v2 memory controller: the lower of the limit and the hierarchy limit', () => {
    const root = fakeRoot({
      'proc/self/cgroup': '12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n',
      'sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes': `${512 * MB}\n`,
      'sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes': `${90 * MB}\n`,
      'sys/fs/cgroup/memory/docker/abc/memory.stat': v1Stat(300 * MB, 10 * MB),
    });
    const memory = readContainerMemory(root);
    expect(memory).toMatchObject({ limitBytes: 300 * MB, source: 'cgroup v1' });
    expect(memory.usageBytes()).toBe(80 * MB);
    // cgroup v1's usage leaves the socket buffers out.
    expect(memory.socketBytes()).toBeUndefined();
  });

  it('reads cgroup v1 mounted at its own root, as Docker mounts it without a cgroup namespace', () => {
    const root = fakeRoot({
      'proc/self/cgroup': '7:cpu,cpuacct:/docker/abc\n5:memory:/docker/abc\n',
      'sys/fs/cgroup/memory/memory.limit_in_bytes': `${128 * MB}\n`,
      'sys/fs/cgroup/memory/memory.usage_in_bytes': `${64 * MB}\n`,
      'sys/fs/cgroup/memory/memory.stat': v1Stat(Number(UNLIMITED_V1), 4 * MB),
    });
    const memory = readContainerMemory(root);
    expect(memory.limitBytes).toBe(128 * MB);
    expect(memory.usageBytes()).toBe(60 * MB);
  });

  it('finds no limit in an unlimited cgroup v1, nor without a cgroup at all', () => {
    const unlimited = fakeRoot({
      'proc/self/cgroup': '4:memory:/\n',
      'sys/fs/cgroup/memory/memory.limit_in_bytes': `${UNLIMITED_V1}\n`,
      'sys/fs/cgroup/memory/memory.usage_in_bytes': '1000\n',
      'sys/fs/cgroup/memory/memory.stat': v1Stat(Number(UNLIMITED_V1), 0),
    });
    expect(readContainerMemory(unlimited).limitBytes).toBeUndefined();
    expect(readContainerMemory(fakeRoot({})).limitBytes).toBeUndefined();
  });

  it('reads the memory of the cgroup as it is now, at every sample', () => {
    const root = fakeRoot({
      'proc/self/cgroup': '0::/\n',
      'sys/fs/cgroup/memory.max': `${256 * MB}\n`,
      'sys/fs/cgroup/memory.current': `${100 * MB}\n`,
      'sys/fs/cgroup/memory.stat': v2Stat(0),
    });
    const memory = readContainerMemory(root);
    expect(memory.usageBytes()).toBe(100 * MB);
    writeFileSync(join(root, 'sys/fs/cgroup/memory.current'), `${230 * MB}\n`);
    expect(memory.usageBytes()).toBe(230 * MB);
  });
});
