import type { SettingsCheckContext } from '../config/load.js';
import { loadAssertionKey, type AssertionKey } from './assertion-key.js';
import { summarizeAssertion } from './assertion-file.js';
import { RESERVED_TOKEN_PARAMS, SECRET_METHODS } from './client-auth.js';
import { trimSecret } from './secret-file.js';

/** What the client authentication settings name, read once at start and handed on. */
export interface TokenStartup {
  /** The client secret at start: `CLIENT_SECRET`, or the content of `CLIENT_SECRET_FILE`, trimmed. Never logged. */
  readonly clientSecret: string | undefined;
  /** `private_key_jwt`: the key file's text (to watch it from) and the key it holds. */
  readonly assertionKey?: { readonly text: string; readonly key: AssertionKey };
  /** `client_assertion_file`: the assertion as read at start, trimmed. */
  readonly assertion?: string;
}

/** The secret: one source, readable and not empty; id and secret required unless pass-through credentials stand in. */
function secretRules(ctx: SettingsCheckContext): string | undefined {
  const { config } = ctx;
  let secret = config.clientSecret;
  if (config.clientSecret !== undefined && config.clientSecretFile !== undefined) {
    ctx.problem(`${ctx.bothSet('clientSecret', 'clientSecretFile')}: set only one (the file is preferred)`);
  } else if (config.clientSecretFile !== undefined) {
    const text = ctx.readFile('clientSecretFile');
    secret = text === undefined ? undefined : trimSecret(text);
    if (secret === '') {
      ctx.problem(`${ctx.name('clientSecretFile')} names a file that is empty: ${config.clientSecretFile}`);
      secret = undefined;
    }
  }
  const method = config.tokenAuthMethod;
  const hasId = config.clientId !== undefined;
  const hasSecret = config.clientSecret !== undefined || config.clientSecretFile !== undefined;
  if (!SECRET_METHODS.includes(method)) {
    if (!hasId) ctx.problem(`CLIENT_ID is required with TOKEN_AUTH_METHOD=${method}`);
  } else if (!config.passthroughBasic || hasId || hasSecret) {
    if (!hasId) ctx.problem('CLIENT_ID is required: the client identifier from the workspace settings');
    if (!hasSecret) ctx.problem('CLIENT_SECRET_FILE (or CLIENT_SECRET) is required: the client secret from the workspace settings');
  }
  return secret;
}

function privateKeyJwtRules(ctx: SettingsCheckContext, secretKey: 'clientSecret' | 'clientSecretFile'): TokenStartup['assertionKey'] {
  const methodName = 'TOKEN_AUTH_METHOD=private_key_jwt';
  if (ctx.given(secretKey))
    ctx.problem(
      `${ctx.bothSet(secretKey, 'clientAssertionKeyFile')}: ${methodName} signs with the key and sends no secret; remove the secret`,
    );
  if (ctx.given('clientAssertionFile'))
    ctx.problem(`${ctx.name('clientAssertionFile')} is set with ${methodName}: it belongs to TOKEN_AUTH_METHOD=client_assertion_file`);
  const path = ctx.config.clientAssertionKeyFile;
  if (!ctx.given('clientAssertionKeyFile')) {
    ctx.problem(
      `${ctx.name('clientAssertionKeyFile')} is required with ${methodName}: a PEM private key (RSA 2048+, EC P-256/P-384 or Ed25519)`,
    );
  }
  if (path === undefined) return undefined;
  const text = ctx.readFile('clientAssertionKeyFile');
  if (text === undefined) return undefined;
  try {
    return { text, key: loadAssertionKey(text, ctx.config.clientAssertionAlg) };
  } catch (err) {
    ctx.problem(`${ctx.name('clientAssertionKeyFile')} ${(err as Error).message}: ${path}`);
    return undefined;
  }
}

function assertionFileRules(ctx: SettingsCheckContext, secretKey: 'clientSecret' | 'clientSecretFile'): string | undefined {
  const methodName = 'TOKEN_AUTH_METHOD=client_assertion_file';
  if (ctx.given(secretKey))
    ctx.problem(
      `${ctx.bothSet(secretKey, 'clientAssertionFile')}: ${methodName} sends the file's assertion and no secret; remove the secret`,
    );
  if (ctx.given('clientAssertionKeyFile'))
    ctx.problem(
      `${ctx.bothSet('clientAssertionKeyFile', 'clientAssertionFile')}: ${methodName} sends the file's assertion; remove the key`,
    );
  const path = ctx.config.clientAssertionFile;
  if (!ctx.given('clientAssertionFile')) {
    ctx.problem(`${ctx.name('clientAssertionFile')} is required with ${methodName}: the file a projected token or JWT-SVID is written to`);
  }
  if (path === undefined) return undefined;
  const text = ctx.readFile('clientAssertionFile');
  if (text === undefined) return undefined;
  try {
    summarizeAssertion(text.trim());
    return text.trim();
  } catch {
    ctx.problem(`${ctx.name('clientAssertionFile')} does not hold a compact JWT (header.payload.signature): ${path}`);
    return undefined;
  }
}

/**
 * The client authentication settings as a whole (RFC 6749 §2.3, RFC 7523 §2.2, RFC 8705 §2.1):
 * what each TOKEN_AUTH_METHOD needs, the settings it refuses beside it (each problem naming
 * both, and where each came from), the secret, and the TOKEN_PARAMS names the proxy sets
 * itself. Reads the secret, key or assertion file once and returns what it read, so that a bad
 * one stops the start (exit 2) and the same content is used after. Never puts a secret or a
 * file's content in a message.
 */
export function checkTokenSettings(ctx: SettingsCheckContext): TokenStartup {
  const { config } = ctx;
  const method = config.tokenAuthMethod;
  const clientSecret = secretRules(ctx);
  const secretKey = ctx.given('clientSecretFile') ? 'clientSecretFile' : 'clientSecret';
  let assertionKey: TokenStartup['assertionKey'];
  let assertion: string | undefined;
  if (method === 'private_key_jwt') {
    assertionKey = privateKeyJwtRules(ctx, secretKey);
  } else if (method === 'client_assertion_file') {
    assertion = assertionFileRules(ctx, secretKey);
  } else {
    if (method === 'tls_client_auth' && config.tlsClientCertFile === undefined && config.tlsClientKeyFile === undefined) {
      // RFC 8705 §2.1: the certificate is the client's only proof of who it is.
      ctx.problem(
        `${ctx.name('tokenAuthMethod')}=tls_client_auth needs TLS_CLIENT_CERT_FILE and TLS_CLIENT_KEY_FILE: the client ` +
          `certificate is what proves the client`,
      );
    }
    if (method === 'tls_client_auth' && ctx.given(secretKey))
      ctx.problem(
        `${ctx.name(secretKey)} is set with TOKEN_AUTH_METHOD=${method}: the client certificate proves the client; remove the secret`,
      );
    for (const key of ['clientAssertionKeyFile', 'clientAssertionFile'] as const) {
      if (ctx.given(key))
        ctx.problem(
          `${ctx.name(key)} is set but TOKEN_AUTH_METHOD is ${method}; set ` +
            `TOKEN_AUTH_METHOD=${key === 'clientAssertionFile' ? 'client_assertion_file' : 'private_key_jwt'} or remove it`,
        );
    }
  }
  if (method !== 'private_key_jwt') {
    for (const key of ['clientAssertionKid', 'clientAssertionAlg'] as const) {
      if (ctx.given(key)) ctx.problem(`${ctx.name(key)} is set but TOKEN_AUTH_METHOD is ${method}; it applies to private_key_jwt only`);
    }
  }
  const reserved = new Set(config.tokenParams.map(([k]) => k).filter((k) => RESERVED_TOKEN_PARAMS.includes(k)));
  for (const k of reserved) ctx.problem(`${ctx.name('tokenParams')} may not set ${k}: the proxy sets it (use TOKEN_SCOPE for scope)`);
  return {
    clientSecret,
    ...(assertionKey !== undefined ? { assertionKey } : {}),
    ...(assertion !== undefined ? { assertion } : {}),
  };
}
