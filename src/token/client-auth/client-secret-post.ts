import { SECRET_SETTINGS, secretMethod } from './secret-method.js';

/** `client_secret_post` (RFC 6749 §2.3.1): id and secret in the form body. The default. */
export const clientSecretPost = secretMethod({
  name: 'client_secret_post',
  authenticate: () => (credential) => ({
    headers: {},
    form: [
      ['client_id', credential.clientId],
      ['client_secret', credential.clientSecret],
    ],
  }),
  explainRefusal: () => ({ credentials: SECRET_SETTINGS }),
});
