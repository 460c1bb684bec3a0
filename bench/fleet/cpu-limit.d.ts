// The types of cpu-limit.js, for the test that imports it.

/** Where a CPU limit can be made here, or why none can. */
export function cpuController(): { root: string; version: 1 | 2; reason?: undefined } | { reason: string };

/** A cgroup held to `share` of one core, with the command prefix that runs a command in it; or why none can be made. */
export function cpuLimit(
  name: string,
  share?: number,
): { dir: string; wrap: string[]; remove(): void; reason?: undefined } | { reason: string };
