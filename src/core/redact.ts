/**
 * A scheme and the slashes after it, however many: `redis://`, but also the malformed
 * `redis:/` and `redis:///`, behind which a hand-written URL's user information still stands.
 */
const SCHEME = '[a-z][a-z0-9+.-]*:\\/*';

/**
 * A password may hold an `@`, a `/`, a `?`, a `#`, a quote or a space its writer did not encode, so
 * where its user information ends cannot be told: it is hidden up to the last `@` there can be. A
 * path that holds an `@` is hidden with it: more is hidden, never a password shown. In a message,
 * a URL quoted as the messages quote a value (`got "…"`) runs to its closing quote and a line's
 * end; one not quoted, to white space.
 */
const QUOTED = new RegExp(`("${SCHEME})[^\\n]*@(?=[^"\\n]*")`, 'gi');
const IN_TEXT = new RegExp(`(\\b${SCHEME})\\S*@`, 'gi');

/**
 * Replaces the user information of every URL in `text` (`http://user:pass@proxy:3128`, and
 * `redis:/user:pass@host` with too few slashes or `redis:///user:pass@host` with too many) by
 * `***`, so a message or a log line that quotes a URL with credentials shows none of them.
 */
export function redactUserinfo(text: string): string {
  return text.replace(QUOTED, '$1***@').replace(IN_TEXT, '$1***@');
}

/** Without a slash, `user:pass@proxy` has no scheme: `user` is the user. */
const AT_START = /^([a-z][a-z0-9+.-]*:\/+)?[\s\S]*@/i;

/**
 * One value meant as a URL, as it may be shown: its user information replaced by `***`, with a
 * scheme and any number of slashes after it, or without a scheme (`user:pass@proxy:3128`), up to
 * the last `@` of the value (a password may hold an unencoded `/`, `?`, `#` or space).
 */
export function withoutUserinfo(value: string): string {
  return value.replace(AT_START, (_m, scheme: string | undefined) => `${scheme ?? ''}***@`);
}
