/**
 * The error codes a token endpoint answers a refusal with (RFC 6749 §5.2), and the reading of a
 * code outside the RFCs that obviously means one of them.
 */

/** The error codes of RFC 6749 §5.2, RFC 6750 §3.1 (`invalid_token`) and RFC 8707 §2 (`invalid_target`). */
export const OAUTH_ERROR_CODES: readonly string[] = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'invalid_target',
  'invalid_token',
];

/** The words of a code, lower case and sorted: `scope_invalid`, `InvalidScope` and `invalid-scope` agree. */
function words(code: string): string {
  return code
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w !== '')
    .sort()
    .join(' ');
}

/**
 * The RFC code an error code outside the RFCs obviously means: the same words in another order,
 * case or separator (`scope_invalid` reads as `invalid_scope`). Undefined when the code is an RFC
 * code already, or when no reading is obvious.
 */
export function nearestOAuthCode(code: string): string | undefined {
  if (OAUTH_ERROR_CODES.includes(code)) return undefined;
  const mine = words(code);
  return OAUTH_ERROR_CODES.find((c) => words(c) === mine);
}
