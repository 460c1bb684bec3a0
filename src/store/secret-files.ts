import { readFile } from 'node:fs/promises';
import type { Clock } from '../core/clock.js';
import type { Log } from '../core/log.js';
import { watchFile } from '../core/watched-file.js';
import { MIN_KEY_BYTES, type StoreSettings } from './settings.js';

export interface SecretFilesOptions {
  passwordFile: string | undefined;
  keyFile: string | undefined;
  /** The settings as checked at start: the watchers start from the files as read then. */
  initial: Pick<StoreSettings, 'password' | 'passwordFileText' | 'keyMaterial'>;
  /** A new password: new connections authenticate with it. */
  onPassword: (password: string) => void;
  /** New key material: a new namespace; the credentials' stores are derived anew from it. */
  onKeyMaterial: (material: Uint8Array) => void;
  clock: Clock;
  log: Log;
  /** Reads a file's bytes; `fs.readFile` unless given (tests). */
  read?: (path: string) => Promise<Uint8Array>;
}

/** Bytes as a string of the same length, one character a byte: the watcher compares texts. */
const asText = (bytes: Uint8Array): string => Buffer.from(bytes).toString('latin1');

/**
 * Watches `TOKEN_STORE_PASSWORD_FILE` and `TOKEN_STORE_KEY_FILE` with the rules of every watched
 * file (`core/watched-file.ts`): a change is picked up within 2 s; an unreadable, empty or short
 * file is logged and the current one stays in use. The key file is read as bytes. Returns a
 * function that stops both.
 */
export function watchSecretFiles(options: SecretFilesOptions): () => void {
  const { clock, log, initial } = options;
  const read = options.read ?? ((path: string) => readFile(path));
  const stops: (() => void)[] = [];
  if (options.passwordFile !== undefined) {
    let current = initial.password;
    stops.push(
      watchFile({
        path: options.passwordFile,
        what: 'TOKEN_STORE_PASSWORD_FILE',
        read: async (path) => Buffer.from(await read(path)).toString('utf8'),
        ...(initial.passwordFileText !== undefined ? { initialText: initial.passwordFileText } : {}),
        parse: (text) => {
          const password = text.trim();
          if (password === '') throw new Error('the file is empty');
          return password;
        },
        onChange: (password) => {
          // The text differs, but the password may not (it was read trimmed).
          if (password === current) return false;
          current = password;
          options.onPassword(password);
          return true;
        },
        clock,
        log,
      }),
    );
  }
  if (options.keyFile !== undefined) {
    stops.push(
      watchFile({
        path: options.keyFile,
        what: 'TOKEN_STORE_KEY_FILE',
        ...(initial.keyMaterial !== undefined ? { initialText: asText(initial.keyMaterial) } : {}),
        read: async (path) => asText(await read(path)),
        parse: (text) => {
          const bytes = Buffer.from(text, 'latin1');
          if (bytes.length < MIN_KEY_BYTES) throw new Error(`the file holds ${bytes.length} bytes, fewer than ${MIN_KEY_BYTES}`);
          return bytes;
        },
        onChange: (material) => options.onKeyMaterial(material),
        clock,
        log,
      }),
    );
  }
  return () => {
    for (const stop of stops) stop();
  };
}
