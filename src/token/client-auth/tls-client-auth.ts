/**
 * `tls_client_auth` (RFC 8705 §2.1): the client certificate the connection presents
 * (TLS_CLIENT_CERT_FILE and TLS_CLIENT_KEY_FILE, the same material every connection of the proxy
 * uses) proves the client; the form only names it. No secret: a shared token store needs
 * TOKEN_STORE_KEY_FILE for this method's tokens.
 */
import { createHash, X509Certificate } from 'node:crypto';
import type { AuthMethod, ClientAuth } from './method.js';

const METHOD = 'TOKEN_AUTH_METHOD=tls_client_auth';

/**
 * The certificate's SHA-256 thumbprint as RFC 8705 §3.1 writes it (`x5t#S256`: base64url of the
 * DER): tokens the identity provider binds to the certificate are shared only by proxies holding it.
 */
export function certificateThumbprint(pemChain: string): string {
  return createHash('sha256').update(new X509Certificate(pemChain).raw).digest('base64url');
}

export const tlsClientAuth: AuthMethod<'tls_client_auth'> = {
  name: 'tls_client_auth',
  usesSecret: false,
  listedAs: 'tls_client_auth',
  mutualTls: true,

  check(ctx, secretSetting) {
    const { config } = ctx;
    if (config.tlsClientCertFile === undefined && config.tlsClientKeyFile === undefined) {
      // RFC 8705 §2.1: the certificate is the client's only proof of who it is.
      ctx.problem(
        `${ctx.name('tokenAuthMethod')}=tls_client_auth needs TLS_CLIENT_CERT_FILE and TLS_CLIENT_KEY_FILE: the client ` +
          `certificate is what proves the client`,
      );
    }
    if (ctx.given(secretSetting)) {
      ctx.problem(`${ctx.name(secretSetting)} is set with ${METHOD}: the client certificate proves the client; remove the secret`);
    }
    return {};
  },

  configure(config) {
    const clientAuth: ClientAuth = {
      authenticate: (credential) => ({ headers: {}, form: [['client_id', credential.clientId]] }),
      explainRefusal: (credential) => tlsClientAuth.explainRefusal(credential, config),
    };
    return {
      clientAuth,
      credential: config.clientId === undefined ? undefined : { clientId: config.clientId, clientSecret: '' },
      // The certificate is watched with the connections' TLS material; a new one fetches a token at once.
      watch: () => () => {},
      describe: () => [],
      material: () => ({}),
    };
  },

  explainRefusal: () => ({
    credentials: 'CLIENT_ID and the client certificate (TLS_CLIENT_CERT_FILE) the identity provider has registered for it',
  }),

  storeDescription(material) {
    if (material.clientCertificate === undefined) throw new Error('tls_client_auth is described by its client certificate; none was given');
    return [['x5t#S256', certificateThumbprint(material.clientCertificate)]];
  },

  storeKeyMaterial: () => ({ from: 'key_file' }),
};
