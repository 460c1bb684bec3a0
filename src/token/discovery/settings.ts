import type { SettingsCheckContext } from '../../config/load.js';

/**
 * `ISSUER_URL` names the token endpoint through its metadata, so `TOKEN_URL` beside it would be a
 * second answer to one question: refused, naming both and where each came from.
 */
export function checkIssuerSettings(ctx: SettingsCheckContext): void {
  if (ctx.given('issuerUrl') && ctx.given('tokenUrl')) {
    ctx.problem(
      `${ctx.bothSet('issuerUrl', 'tokenUrl')}: ISSUER_URL's metadata names the token endpoint; set only one ` +
        '(ISSUER_URL to read it from the identity provider, TOKEN_URL to name it yourself)',
    );
  }
}
