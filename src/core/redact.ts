/**
 * Replaces the user information of every URL in `text` (`http://user:pass@proxy:3128`) by `***`,
 * so a proxy URL with credentials can appear in a message or a log line (PRODUCT §12.4).
 */
export function redactUserinfo(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*@/gi, '$1***@');
}
