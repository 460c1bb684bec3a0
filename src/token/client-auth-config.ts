import type { Config, ConfigSources, TokenAuthMethod } from '../config/config.js';
import { loadAssertionKey } from './assertion-key.js';
import { summarizeAssertion } from './client-auth.js';
import { unreadableFileProblem } from '../core/unreadable.js';

/**
 * The configuration rules of the client authentication methods (PRODUCT §3): what each method
 * needs, and the settings it refuses beside it, each problem naming both settings. Reads the key
 * or assertion file once so that a bad one stops the start (exit 2). Never puts file content in a
 * message.
 */
export function checkClientAuth(
  method: TokenAuthMethod,
  out: Record<string, unknown>,
  raw: Map<string, unknown>,
  name: (key: keyof Config) => string,
  sources: ConfigSources,
  problems: string[],
): void {
  const secretName = raw.has('clientSecretFile') ? name('clientSecretFile') : name('clientSecret');
  const secretSet = raw.has('clientSecret') || raw.has('clientSecretFile');
  const keySet = raw.has('clientAssertionKeyFile');
  const fileSet = raw.has('clientAssertionFile');
  const methodName = `TOKEN_AUTH_METHOD=${method}`;
  const read = (key: keyof Config): string | undefined => {
    try {
      return sources.readSecretFile(out[key] as string);
    } catch (err) {
      problems.push(unreadableFileProblem(name(key), out[key] as string, err));
      return undefined;
    }
  };
  if (method === 'private_key_jwt') {
    if (secretSet) problems.push(`${secretName} and ${name('clientAssertionKeyFile')} are both set: ${methodName} signs with the key and sends no secret; remove the secret`);
    if (fileSet) problems.push(`${name('clientAssertionFile')} is set with ${methodName}: it belongs to TOKEN_AUTH_METHOD=client_assertion_file`);
    if (!keySet) problems.push(`${name('clientAssertionKeyFile')} is required with ${methodName}: a PEM private key (RSA 2048+, EC P-256/P-384 or Ed25519)`);
    else if (out.clientAssertionKeyFile !== undefined) {
      const pem = read('clientAssertionKeyFile');
      if (pem !== undefined) {
        try {
          loadAssertionKey(pem, out.clientAssertionAlg as string | undefined);
        } catch (err) {
          problems.push(`${name('clientAssertionKeyFile')} ${(err as Error).message}: ${out.clientAssertionKeyFile as string}`);
        }
      }
    }
  } else if (method === 'client_assertion_file') {
    if (secretSet) problems.push(`${secretName} and ${name('clientAssertionFile')} are both set: ${methodName} sends the file's assertion and no secret; remove the secret`);
    if (keySet) problems.push(`${name('clientAssertionKeyFile')} and ${name('clientAssertionFile')} are both set: ${methodName} sends the file's assertion; remove the key`);
    if (!fileSet) problems.push(`${name('clientAssertionFile')} is required with ${methodName}: the file a projected token or JWT-SVID is written to`);
    else if (out.clientAssertionFile !== undefined) {
      const jwt = read('clientAssertionFile');
      if (jwt !== undefined) {
        try {
          summarizeAssertion(jwt.trim());
        } catch {
          problems.push(`${name('clientAssertionFile')} does not hold a compact JWT (header.payload.signature): ${out.clientAssertionFile as string}`);
        }
      }
    }
  } else {
    if (method === 'tls_client_auth' && secretSet) problems.push(`${secretName} is set with ${methodName}: the client certificate proves the client; remove the secret`);
    for (const key of ['clientAssertionKeyFile', 'clientAssertionFile'] as const) {
      if (raw.has(key)) problems.push(`${name(key)} is set but TOKEN_AUTH_METHOD is ${method}; set TOKEN_AUTH_METHOD=${key === 'clientAssertionFile' ? 'client_assertion_file' : 'private_key_jwt'} or remove it`);
    }
  }
  if (method !== 'private_key_jwt') {
    for (const key of ['clientAssertionKid', 'clientAssertionAlg'] as const) {
      if (raw.has(key)) problems.push(`${name(key)} is set but TOKEN_AUTH_METHOD is ${method}; it applies to private_key_jwt only`);
    }
  }
  out.tokenParams ??= [];
}
