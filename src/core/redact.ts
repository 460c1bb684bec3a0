/**
 * Replaces the user information of every URL in `text` (`http://user:pass@proxy:3128`) by `***`,
 * so a message or a log line that quotes a proxy URL with credentials shows none of them.
 */
export function redactUserinfo(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*@/gi, '$1***@');
}

/**
 * One value meant as a URL, as it may be shown: its user information replaced by `***`, with a
 * scheme or without one (`user:pass@proxy:3128`), up to the last `@` before the path.
 */
export function withoutUserinfo(value: string): string {
  return value.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)?[^/?#]*@/, (_m, scheme: string | undefined) => `${scheme ?? ''}***@`);
}
