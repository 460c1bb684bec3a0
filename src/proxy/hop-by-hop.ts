/**
 * Connection-specific fields (RFC 9110 §7.6.1), the one header rule both directions share: the
 * hop-by-hop fields, and those a `Connection` header names, are never forwarded. Headers travel
 * as flat raw lists (`[name, value, name, value, ...]`) both ways, so names keep their case and
 * repeated fields their order.
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1): never forwarded in either direction. */
export const HOP_BY_HOP: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/** Fields a `Connection` header names (RFC 9110 §7.6.1), lower-cased; none for the usual values. */
export function connectionNamed(value: string): Set<string> | undefined {
  if (value === 'keep-alive' || value === 'close') return undefined;
  let named: Set<string> | undefined;
  for (const token of value.split(',')) {
    const t = token.trim().toLowerCase();
    if (t !== '' && t !== 'keep-alive' && t !== 'close') (named ??= new Set()).add(t);
  }
  return named;
}

/** A flat header list less the fields `named` holds (by their lower-case names). */
export function withoutNamed(list: readonly string[], named: Set<string>): string[] {
  const kept: string[] = [];
  for (let i = 0; i < list.length; i += 2) {
    if (!named.has(list[i]!.toLowerCase())) kept.push(list[i]!, list[i + 1]!);
  }
  return kept;
}
