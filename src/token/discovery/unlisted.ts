import type { IssuerMetadata } from './issuer-metadata.js';

/** What the client is configured to send that an issuer's metadata may list. */
export interface ClientChoices {
  /**
   * `TOKEN_AUTH_METHOD`, as `token_endpoint_auth_methods_supported` would list it; undefined when
   * the method has no registered name to look for.
   */
  readonly authMethod: string | undefined;
  /** The DPoP proofs' algorithm (RFC 9449 §4.2), with `DPOP` on or required. */
  readonly dpopAlg: string | undefined;
}

/**
 * Warnings, one a line, for what the client sends that the metadata lists without: the method
 * (`token_endpoint_auth_methods_supported`, RFC 8414 §2) and the proofs' algorithm
 * (`dpop_signing_alg_values_supported`, RFC 9449 §5.1). A list the metadata does not give says
 * nothing. The token endpoint has the last word: these only name the likely refusal before it comes.
 */
export function unlistedChoices(metadata: IssuerMetadata, choices: ClientChoices): string[] {
  const warnings: string[] = [];
  const method = choices.authMethod;
  const methods = metadata.authMethods;
  if (methods !== undefined && method !== undefined && !methods.includes(method)) {
    warnings.push(
      `ISSUER_URL's metadata lists token_endpoint_auth_methods_supported ${methods.join(', ')}, without TOKEN_AUTH_METHOD=${method}: ` +
        'the token endpoint is likely to refuse the client; set TOKEN_AUTH_METHOD to a method it lists and the client is registered with',
    );
  }
  const algs = metadata.dpopAlgs;
  if (algs !== undefined && choices.dpopAlg !== undefined && !algs.includes(choices.dpopAlg)) {
    warnings.push(
      `ISSUER_URL's metadata lists dpop_signing_alg_values_supported ${algs.join(', ')}, without ${choices.dpopAlg}, the DPoP proofs' ` +
        'algorithm: the token endpoint is likely to refuse the proofs; set DPOP_ALG, or a DPOP_KEY_FILE of a type it lists',
    );
  }
  return warnings;
}
