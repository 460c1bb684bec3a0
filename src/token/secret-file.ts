import type { Clock } from '../core/clock.js';
import { watchFile } from '../core/watched-file.js';
import type { Log } from '../core/log.js';

/** Trims a secret as read from a file (a trailing newline and surrounding white space). */
export function trimSecret(raw: string): string {
  return raw.trim();
}

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
 * Watches the secret file with the rules every watched file follows (`core/watched-file.ts`):
 * trimmed, an unreadable or empty file keeps the old secret, a new secret is reported once.
 * Returns a function that stops the watch.
 */
export function watchSecretFile(options: SecretWatcherOptions): () => void {
  let current = options.initial;
  return watchFile({
    path: options.path,
    what: 'secret file',
    initialText: options.initial,
    parse: (text) => {
      const secret = trimSecret(text);
      if (secret === '') throw new Error('the file is empty');
      return secret;
    },
    onChange: (secret) => {
      if (secret === current) return false;
      current = secret;
      options.onChange(secret);
      return true;
    },
    clock: options.clock,
    log: options.log,
    ...(options.read ? { read: options.read } : {}),
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
  });
}
