import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Clock } from '../clock.js';
import type { Log } from '../log.js';

/** How often a watched file is read: a change is seen within 2 s (PRODUCT §3, §12.6). */
export const FILE_POLL_INTERVAL_MS = 1_000;

export interface WatchFileOptions<T> {
  path: string;
  /** What the file is, for log lines: `secret file`, `CA_FILE`, `TLS_CLIENT_CERT_FILE`. */
  what: string;
  /** The content read at start, so the first poll reports no change. */
  initialText: string;
  /**
   * Turns the file's text into the value handed to `onChange`. Throws an Error whose message
   * says what is wrong (never the content): the previous value stays in use.
   */
  parse: (text: string) => T;
  onChange: (value: T) => void;
  /** Called for every new problem (unreadable, malformed), after it is logged. */
  onError?: (reason: string) => void;
  clock: Clock;
  log: Log;
  read?: (path: string) => Promise<string>;
  intervalMs?: number;
  /**
   * Also listen with `fs.watch` on the file's folder so an edit is seen at once; the poll stays
   * the rule (a `..data` symlink swap, a network file system, a watch that failed).
   */
  fsWatch?: boolean;
}

/**
 * Watches a file by reading it every second (PRODUCT §12.6): one set of rules for the secret, CA,
 * client certificate and key and assertion key files. Reading (not only `fs.watch`) sees every
 * kind of replacement: an editor's rename, and Kubernetes' `..data` symlink swap, which changes no
 * inode the watched path resolves to. An unreadable or malformed file is logged once per problem
 * and the previous value stays in use. Returns a function that stops the watch.
 */
export function watchFile<T>(options: WatchFileOptions<T>): () => void {
  const { path, what, clock, log, parse, onChange } = options;
  const read = options.read ?? ((p: string) => readFile(p, 'utf8'));
  const interval = options.intervalMs ?? FILE_POLL_INTERVAL_MS;
  let current = options.initialText;
  let problem: string | undefined;
  let timer: unknown;
  let stopped = false;
  let polling = false;
  let again = false;

  const report = (key: string, fields: { code?: string; reason?: string }, message: string): void => {
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
      report(`read:${code}`, { code }, `${what} cannot be read; keeping the current one`);
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
    if (text === current) return;
    current = text;
    log.info({ path }, `${what} changed`);
    onChange(value);
  };

  /** One poll at a time; a poll asked for meanwhile runs right after. */
  const runPoll = (): Promise<void> => {
    if (polling) {
      again = true;
      return Promise.resolve();
    }
    polling = true;
    return poll().finally(() => {
      polling = false;
      if (again && !stopped) {
        again = false;
        void runPoll();
      }
    });
  };

  const schedule = (): void => {
    if (stopped) return;
    timer = clock.setTimeout(() => {
      void runPoll().finally(schedule);
    }, interval);
  };
  schedule();

  let watcher: FSWatcher | undefined;
  if (options.fsWatch) {
    try {
      watcher = watch(dirname(path), { persistent: false }, () => void runPoll());
      watcher.on('error', () => watcher?.close());
    } catch {
      watcher = undefined; // the poll alone is enough
    }
  }
  return () => {
    stopped = true;
    clock.clearTimeout(timer);
    watcher?.close();
  };
}
