import { clientSecretPost } from './client-secret-post.js';
import { SECRET_SETTINGS, secretMethod } from './secret-method.js';

/**
 * RFC 6749 §2.3.1: id and secret are form-urlencoded (Appendix B) before they are joined for
 * Basic: the same encoder as the form body, which also encodes `!'()~`.
 */
function formEncode(s: string): string {
  return new URLSearchParams([['', s]]).toString().slice(1);
}

/** Whether RFC 6749 §2.3.1's form-encoding changes `s` (`+ / : & = % ~ !`, spaces, non-ASCII...). */
export function changedByFormEncoding(s: string): boolean {
  return formEncode(s) !== s;
}

/**
 * `client_secret_basic` (RFC 6749 §2.3.1): id and secret, each form-encoded, in an
 * `Authorization: Basic` header. Some identity providers compare the Basic credentials without
 * decoding them: when encoding changes the id or the secret, a refusal suggests sending them in
 * the form body, without saying which characters the secret holds.
 */
export const clientSecretBasic = secretMethod({
  name: 'client_secret_basic',
  authenticate: () => (credential) => {
    const pair = `${formEncode(credential.clientId)}:${formEncode(credential.clientSecret)}`;
    return { headers: { authorization: `Basic ${Buffer.from(pair).toString('base64')}` }, form: [] };
  },
  explainRefusal(credential) {
    const changed = [
      ...(changedByFormEncoding(credential.clientId) ? ['the client id'] : []),
      ...(changedByFormEncoding(credential.clientSecret) ? ['the secret'] : []),
    ];
    if (changed.length === 0) return { credentials: SECRET_SETTINGS };
    return {
      credentials: SECRET_SETTINGS,
      alternative:
        `${changed.join(' and ')} ${changed.length > 1 ? 'have' : 'has'} characters that RFC 6749 §2.3.1 form-encodes in ` +
        'Basic credentials (such as + / : & = % ~ !), which some identity providers compare without decoding: ' +
        `try TOKEN_AUTH_METHOD=${clientSecretPost.name}`,
    };
  },
});
