import { readFile } from 'node:fs/promises';
import type { Clock } from './clock.js';
import type { Log } from './log.js';
import { DIRECTORY_HINT } from './unreadable.js';

/** How often a watched file is read: a change is seen within 2 s. */
export const FILE_POLL_INTERVAL_MS = 1_000;

export interface WatchFileOptions<T> {
  path: string;
  /** What the file is, for log lines: `secret file`, `CA_FILE`, `TLS_CLIENT_CERT_FILE`; default `file`. */
  what?: string;
  /**
   * The content read at start (checked then as a configuration error), so the first poll reports
   * no change. Without it, the first usable read is the baseline and reports no change either.
   */
  initialText?: string;
  /**
   * Turns the file's text into the value handed to `onChange`. Throws an Error whose message
   * says what is wrong (never the content): the previous value stays in use.
   */
  parse: (text: string) => T;
  /** Called with each new value; returns false when the value is the one in use (nothing is logged). */
  onChange: (value: T) => boolean | void;
  /** Called for every new problem (unreadable, malformed), after it is logged. */
  onError?: (reason: string) => void;
  clock: Clock;
  log: Log;
  read?: (path: string) => Promise<string>;
  intervalMs?: number;
}

/**
 * Watches a file by reading it every second, so a change is seen within 2 s: one set of rules for the secret, CA,
 * client certificate and key and assertion key files. Reading (not only `fs.watch`) sees every
 * kind of replacement: an editor's rename, and Kubernetes' `..data` symlink swap, which changes no
 * inode the watched path resolves to (an `fs.watch` on the path misses it); one read a second of a
 * small file costs nothing measurable. An unreadable or malformed file is logged once per problem
 * and the previous value stays in use. Returns a function that stops the watch.
 */
export function watchFile<T>(options: WatchFileOptions<T>): () => void {
  const { path, clock, log, parse, onChange } = options;
  const what = options.what ?? 'file';
  const read = options.read ?? ((p: string) => readFile(p, 'utf8'));
  const interval = options.intervalMs ?? FILE_POLL_INTERVAL_MS;
  let current: string | undefined = options.initialText;
  let problem: string | undefined;
  let timer: unknown;
  let stopped = false;

  const report = (key: string, fields: { code?: string; reason?: string; hint?: string }, message: string): void => {
    if (problem !== key) {
      log.warn({ path, ...fields }, message);
      const reason = fields.code ?? fields.reason ?? 'error';
      options.onError?.(reason);
    }
    problem = key;
  };

  const poll = async (): Promise<void> => {
    let text: string;
    try {
      text = await read(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      // A directory put where the file was (a Secret's mount point): the setting must name a file in it.
      const hint = code === 'EISDIR' ? { hint: `a directory: ${DIRECTORY_HINT}` } : {};
      report(`read:${code}`, { code, ...hint }, `${what} cannot be read; keeping the current one`);
      return;
    }
    if (text === current && problem === undefined) return;
    let value: T;
    try {
      value = parse(text);
    } catch (err) {
      report(`parse:${text}`, { reason: (err as Error).message }, `${what} is not usable; keeping the current one`);
      return;
    }
    if (problem !== undefined) log.info({ path }, `${what} is usable again`);
    problem = undefined;
    if (current === undefined) current = text;
    if (text === current) return;
    current = text;
    // The text differs, but the value may not (the secret at start was read trimmed).
    if (onChange(value) !== false) log.info({ path }, `${what} changed`);
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
