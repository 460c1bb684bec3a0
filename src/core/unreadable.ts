/**
 * The configuration problem for a file a setting names that cannot be read: one wording for the
 * secret, the CA, the client certificate, the keys and the assertion. A permission
 * error says which user the proxy runs as, since that is what a mounted file must be readable by
 * (the image runs as uid 65532).
 */
export function unreadableFileProblem(setting: string, path: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const reason = code ?? (err as Error).message;
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  const who = code === 'EACCES' && uid !== undefined ? `; the proxy runs as uid ${uid}: make the file readable by it` : '';
  return `${setting} names a file that cannot be read (${reason}${who}): ${path}`;
}
