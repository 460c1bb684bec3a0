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

/**
 * Every error code the RFCs register that a token endpoint may answer: the refusals above, RFC
 * 6749's others (§4.1.2.1), RFC 6750's `insufficient_scope`, RFC 8628's (§3.5) and RFC 9449's
 * (§7.1, §8). Shown as sent, whatever short secret one might spell (parse-response.ts).
 */
export const REGISTERED_ERROR_CODES: ReadonlySet<string> = new Set([
  ...OAUTH_ERROR_CODES,
  'access_denied',
  'unsupported_response_type',
  'server_error',
  'temporarily_unavailable',
  'insufficient_scope',
  'authorization_pending',
  'slow_down',
  'expired_token',
  'invalid_dpop_proof',
  'use_dpop_nonce',
]);

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
