import { readFile } from 'node:fs/promises';
import type { Clock } from '../clock.js';
import { trimSecret } from '../config.js';
import type { Log } from '../log.js';

/** How often the secret file is read: a change is seen within 2 s (PRODUCT §3). */
export const SECRET_POLL_INTERVAL_MS = 1_000;

export interface SecretWatcherOptions {
  path: string;
  /** The secret read at start, so the first poll reports no change. */
  initial: string;
  onChange: (secret: string) => void;
  clock: Clock;
  log: Log;
  read?: (path: string) => Promise<string>;
  intervalMs?: number;
}

/**
 * Watches the secret file by reading it every second. Reading (not `fs.watch`) sees every kind of
 * replacement: an editor's rename, and Kubernetes' `..data` symlink swap, which changes no inode
 * the watched path resolves to until the swap. An unreadable or empty file keeps the old secret.
 * Returns a function that stops the watch.
 */
export function watchSecretFile(options: SecretWatcherOptions): () => void {
  const { path, clock, log, onChange } = options;
  const read = options.read ?? ((p: string) => readFile(p, 'utf8'));
  const interval = options.intervalMs ?? SECRET_POLL_INTERVAL_MS;
  let current = options.initial;
  let problem: string | undefined;
  let timer: unknown;
  let stopped = false;

  const poll = async (): Promise<void> => {
    try {
      const secret = trimSecret(await read(path));
      if (secret === '') {
        if (problem !== 'empty') log.warn({ path }, 'secret file is empty; keeping the current secret');
        problem = 'empty';
      } else {
        if (problem !== undefined) log.info({ path }, 'secret file is readable again');
        problem = undefined;
        if (secret !== current) {
          current = secret;
          log.info({ path }, 'secret file changed');
          onChange(secret);
        }
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (problem !== code) log.warn({ path, code }, 'secret file cannot be read; keeping the current secret');
      problem = code;
    }
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = clock.setTimeout(() => {
      void poll().finally(schedule);
    }, interval);
  };
  schedule();
  return () => {
    stopped = true;
    clock.clearTimeout(timer);
  };
}
