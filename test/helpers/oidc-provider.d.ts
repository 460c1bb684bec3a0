/** The little of oidc-provider's API the tests use (the package ships no type declarations). */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ResourceServer {
    scope: string;
    audience?: string;
    accessTokenFormat?: 'opaque' | 'jwt';
    accessTokenTTL?: number;
  }

  export interface Configuration {
    clients?: Record<string, unknown>[];
    /** The client authentication methods the token endpoint accepts, as its metadata lists them. */
    clientAuthMethods?: string[];
    scopes?: string[];
    features?: {
      devInteractions?: { enabled: boolean };
      clientCredentials?: { enabled: boolean };
      /** RFC 9449: DPoP-bound tokens (`cnf.jkt`); a nonce demanded where `requireNonce` says so (needs `nonceSecret`, 32 bytes). */
      dPoP?: { enabled: boolean; nonceSecret?: Buffer; requireNonce?: (ctx: unknown) => boolean };
      resourceIndicators?: {
        enabled: boolean;
        defaultResource?: (ctx: unknown, client: unknown, oneOf?: string) => string | undefined | Promise<string | undefined>;
        getResourceServerInfo?: (ctx: unknown, resource: string, client: unknown) => ResourceServer | Promise<ResourceServer>;
      };
    };
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    /** Events such as `grant.success` (ctx) and `grant.error` (ctx, error). */
    on(event: string, listener: (...args: never[]) => void): this;
  }

  export const errors: { InvalidTarget: new (description?: string) => Error };
}
