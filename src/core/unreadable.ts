import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The configuration problem for a file a setting names that cannot be read: one wording for the
 * secret, the CA, the client certificate, the keys and the assertion. A permission
 * error says which user the proxy runs as, since that is what a mounted file must be readable by
 * (the image runs as uid 65532); a directory (a Secret's mount point named instead of its key's
 * file) says which files it holds, to name one of them.
 */
export function unreadableFileProblem(setting: string, path: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EISDIR') return `${setting} names a directory, not a file (EISDIR): ${path}; ${directoryHint(path)}`;
  const reason = code ?? (err as Error).message;
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  const who = code === 'EACCES' && uid !== undefined ? `; the proxy runs as uid ${uid}: make the file readable by it` : '';
  return `${setting} names a file that cannot be read (${reason}${who}): ${path}`;
}

/** What to do when a file setting names a directory, in a few words. */
export const DIRECTORY_HINT = 'name the file inside it';

/**
 * {@link DIRECTORY_HINT}, with the files the directory holds (the names of a Secret's keys,
 * hidden entries such as Kubernetes' `..data` left out), a few of them; never their content.
 */
function directoryHint(path: string): string {
  let names: string[];
  try {
    names = readdirSync(path, { withFileTypes: true })
      .filter((entry) => !entry.name.startsWith('.') && !entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch {
    names = [];
  }
  if (names.length === 0) return `${DIRECTORY_HINT}, such as ${join(path, 'file')}`;
  const shown = names.slice(0, 3).map((name) => join(path, name));
  return `${DIRECTORY_HINT}: ${names.length === 1 ? shown[0]! : `one of ${shown.join(', ')}${names.length > 3 ? ', …' : ''}`}`;
}
