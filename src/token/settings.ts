import type { SettingsCheckContext } from '../config/load.js';
import { AUTH_METHODS, authMethod, type TokenStartup } from './client-auth/index.js';
import { trimSecret } from './secret-file.js';

/** Form field names that TOKEN_PARAMS may not set: the grant and the client authentication methods own them. */
export const RESERVED_TOKEN_PARAMS: readonly string[] = [
  'grant_type',
  'client_id',
  'client_secret',
  'scope',
  'client_assertion',
  'client_assertion_type',
];

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
  const method = authMethod(config.tokenAuthMethod);
  const hasId = config.clientId !== undefined;
  // Given counts, refused or not: a refused secret is said once, as refused, not also as missing.
  const hasSecret = ctx.given('clientSecret') || ctx.given('clientSecretFile');
  if (!method.usesSecret) {
    if (!hasId) ctx.problem(`${ctx.name('clientId')} is required with ${ctx.name('tokenAuthMethod')}=${method.name}`);
  } else if (!config.passthroughBasic || hasId || hasSecret) {
    if (!hasId) ctx.problem(`${ctx.name('clientId')} is required: the client identifier from the workspace settings`);
    if (!hasSecret) {
      ctx.problem(
        `${ctx.name('clientSecretFile')} (or ${ctx.name('clientSecret')}) is required: the client secret from the workspace settings`,
      );
    }
  }
  return secret;
}

/**
 * The settings another method's proof is made of, refused beside this one and naming that
 * method. A method whose proof is read from a setting of its own says in its check what it
 * makes of another's.
 */
function othersSettings(ctx: SettingsCheckContext): void {
  const method = authMethod(ctx.config.tokenAuthMethod);
  const others = AUTH_METHODS.filter((other) => other !== method);
  if (method.proofSetting === undefined) {
    for (const { name, proofSetting } of others) {
      if (proofSetting !== undefined && ctx.given(proofSetting))
        ctx.problem(`${ctx.name(proofSetting)} is set but TOKEN_AUTH_METHOD is ${method.name}; set TOKEN_AUTH_METHOD=${name} or remove it`);
    }
  }
  for (const { name, proofOptions } of others) {
    for (const key of proofOptions ?? []) {
      if (ctx.given(key)) ctx.problem(`${ctx.name(key)} is set but TOKEN_AUTH_METHOD is ${method.name}; it applies to ${name} only`);
    }
  }
}

/**
 * The client authentication settings as a whole (RFC 6749 §2.3, RFC 7523 §2.2, RFC 8705 §2.1):
 * the secret, what the configured TOKEN_AUTH_METHOD needs and the settings it refuses beside it
 * (its record's check; each problem naming both settings, and where each came from), the
 * settings of the other methods, and the TOKEN_PARAMS names the proxy sets itself. Reads the
 * secret, key or assertion file once and returns what it read, so that a bad one stops the start
 * (exit 2) and the same content is used after. Never puts a secret or a file's content in a message.
 */
export function checkTokenSettings(ctx: SettingsCheckContext): TokenStartup {
  const { config } = ctx;
  const clientSecret = secretRules(ctx);
  const read = authMethod(config.tokenAuthMethod).check(ctx, ctx.given('clientSecretFile') ? 'clientSecretFile' : 'clientSecret');
  othersSettings(ctx);
  const reserved = new Set(config.tokenParams.map(([k]) => k).filter((k) => RESERVED_TOKEN_PARAMS.includes(k)));
  for (const k of reserved) ctx.problem(`${ctx.name('tokenParams')} may not set ${k}: the proxy sets it (use TOKEN_SCOPE for scope)`);
  scopeRules(ctx);
  return { ...read, clientSecret };
}

/**
 * Scopes are separated by spaces (RFC 6749 §3.3): `a,b` is one scope, which an identity provider
 * refuses or, worse, drops. A comma is legal inside a scope token, so this is a warning, naming
 * the space-separated form.
 */
function scopeRules(ctx: SettingsCheckContext): void {
  const scope = ctx.config.tokenScope;
  if (scope === undefined || !scope.includes(',')) return;
  const spaced = scope
    .split(/[\s,]+/)
    .filter((s) => s !== '')
    .join(' ');
  ctx.warn(
    'tokenScope',
    `${ctx.name('tokenScope')} holds a comma (got ${JSON.stringify(scope)}): scopes are separated by spaces (RFC 6749 §3.3), so ` +
      `the identity provider reads ${JSON.stringify(scope.trim())} as one scope; for several, write TOKEN_SCOPE=${JSON.stringify(spaced)}`,
  );
}
