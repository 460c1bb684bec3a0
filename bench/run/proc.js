// What Linux's /proc tells of a candidate: the CPU time it has used and its peak resident set.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Readers of /proc/PID; `cpuMicros` throws once the process has gone. */
export function createProcReader() {
  const clockTicks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;
  return {
    /** CPU time (user + system) of a process, in microseconds (proc(5): utime and stime, in clock ticks). */
    cpuMicros(pid) {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1e6) / clockTicks;
    },
    /** Peak resident set of a process (VmHWM), in MB; NaN when it is not told. */
    peakRssMb(pid) {
      const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return match ? Number(match[1]) / 1024 : NaN;
    },
  };
}
