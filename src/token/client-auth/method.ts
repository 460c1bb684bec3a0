/**
 * The shape of a client authentication method (`TOKEN_AUTH_METHOD`; RFC 6749 §2.3, RFC 7523 §2.2,
 * RFC 8705 §2.1): one record holds everything the proxy knows of a method, as oauth4webapi makes
 * each method one small factory. The records are the other files of this folder; `index.ts`
 * lists them.
 */
import type { KeyObject } from 'node:crypto';
import type { Config, TokenAuthMethod } from '../../config/config.js';
import type { SettingsCheckContext } from '../../config/load.js';
import type { Clock } from '../../core/clock.js';
import type { Log } from '../../core/log.js';
import type { AssertionKey } from './assertion-key.js';

/** One client's identity at the token endpoint: its id, and its secret when it has one ('' when not). */
export interface Credential {
  readonly clientId: string;
  readonly clientSecret: string;
}

/** What a method adds to one token request: headers and form fields (beside grant_type). */
export interface ClientAuthParts {
  readonly headers: Record<string, string>;
  readonly form: ReadonlyArray<readonly [string, string]>;
}

/** The proof for one token request. Called for every request, retries included, so an assertion is fresh. */
export type Authenticate = (credential: Credential, tokenUrl: string) => Promise<ClientAuthParts> | ClientAuthParts;

/** What the diagnosis of a refused client names: never a secret, only settings and methods. */
export interface RefusalExplanation {
  /** The settings the client's proof is made of, named first when the endpoint refuses the client. */
  readonly credentials: string;
  /** Another method worth trying, when there is a reason to; never quotes the secret. */
  readonly alternative?: string;
}

/** How the token requests of a client are authenticated, and how their refusal is explained. */
export interface ClientAuth {
  readonly authenticate: Authenticate;
  explainRefusal(credential: Credential): RefusalExplanation;
}

/** What the client authentication settings named, read once at start and handed on. Never logged. */
export interface TokenStartup {
  /** The client secret at start: `CLIENT_SECRET`, or the content of `CLIENT_SECRET_FILE`, trimmed. */
  readonly clientSecret: string | undefined;
  /** The assertion key file's text (to watch it from) and the key it holds. */
  readonly assertionKey?: { readonly text: string; readonly key: AssertionKey };
  /** The client assertion file as read at start, trimmed. */
  readonly assertion?: string;
}

/** The setting a given secret came from (a message names the one that was set). */
export type SecretSetting = 'clientSecret' | 'clientSecretFile';

/** What a watch tells when a file the credential is made of changes: a token source. */
export interface CredentialTarget {
  /** A new secret: fetch with it at once. */
  setCredential(credential: Credential): void;
  /** A new key or assertion file, the credential itself unchanged: fetch at once. */
  refreshNow(reason: string): void;
}

/** The configured client: how it authenticates, its credential, and the watches on its files. */
export interface ConfiguredCredential {
  readonly clientAuth: ClientAuth;
  /** The configured credential, when there is one (the secret is empty for the methods without one). */
  readonly credential: Credential | undefined;
  /**
   * Watches the secret, key or assertion file: a new secret is handed to `target.setCredential`,
   * a new key or assertion to `target.refreshNow`, so a token is fetched with it at once.
   * Returns the function that stops the watch.
   */
  watch(target: CredentialTarget): () => void;
  /** Lines for `check` about the credential; never the secret, the assertion or the key. */
  describe(nowMs: number): string[];
  /**
   * The method's secret material now (a rotated secret or key included), for a shared token store
   * to name and key the credential's entry with; the client certificate is the TLS material's.
   */
  material(): CredentialMaterial;
}

/** What a method is configured with beside the settings. */
export interface MethodDeps {
  readonly clock: Clock;
  readonly log: Log;
  /** The secret, key or assertion as the settings check read it at start. */
  readonly startup: TokenStartup;
  /** Reads a file afresh (a client assertion for every request). */
  readonly read: (path: string) => string;
}

/**
 * The secret material a credential is made of, current (as read at start, or after a rotation):
 * what a shared token store names its entry and derives its key from. Never logged or stored.
 */
export interface CredentialMaterial {
  readonly clientSecret?: string | undefined;
  /** The key client assertions are signed with. */
  readonly assertionKey?: KeyObject | undefined;
  /** TLS_CLIENT_CERT_FILE's PEM chain; its first certificate is the client's. */
  readonly clientCertificate?: string | undefined;
}

/** One named part of the description that names a shared-store entry: no secret, though not shown either. */
export type DescriptionPart = readonly [name: string, value: string];

/**
 * What a shared token store derives its key from for a credential: the method's own secret
 * material, or nothing of the method's (`key_file`: only `TOKEN_STORE_KEY_FILE`, without which
 * the credential's tokens are not shared). A key file, when given, serves every method.
 */
export type StoreKeyMaterial = { readonly from: 'client_secret' | 'private_key'; readonly secret: Buffer } | { readonly from: 'key_file' };

/** One client authentication method: everything the proxy knows of it. */
export interface AuthMethod<Name extends TokenAuthMethod = TokenAuthMethod> {
  /** Its `TOKEN_AUTH_METHOD` value. */
  readonly name: Name;
  /**
   * Whether the client secret is its proof (sent, or signing an assertion): it then needs
   * `CLIENT_SECRET_FILE` or `CLIENT_SECRET`, and pass-through Basic credentials use it.
   */
  readonly usesSecret: boolean;
  /** The setting its proof is read from, when not the secret: set with another method, it is refused, naming this one. */
  readonly proofSetting?: keyof Config;
  /** Settings that shape its proof only: set with another method, they are refused, naming this one. */
  readonly proofOptions?: readonly (keyof Config)[];
  /**
   * The name an authorization server's metadata lists it by in
   * `token_endpoint_auth_methods_supported` (RFC 8414 §2, from the IANA registry of token
   * endpoint authentication methods), or undefined when no registered name fits.
   */
  readonly listedAs: string | undefined;
  /**
   * Its proof is the TLS client certificate (RFC 8705 §2): the token endpoint's mutual-TLS alias
   * is used where an issuer's metadata names one (RFC 8705 §5).
   */
  readonly mutualTls?: boolean;
  /**
   * Its settings check, beside the rules every method shares: what it needs, what it refuses
   * beside it (every problem recorded, naming its setting), and what it read at start.
   */
  check(ctx: SettingsCheckContext, secretSetting: SecretSetting): Partial<TokenStartup>;
  /** The configured client: how it authenticates a token request, its credential, the watches on its files. */
  configure(config: Config, deps: MethodDeps): ConfiguredCredential;
  /** How a refusal of `credential` is explained: the settings to check, an alternative. */
  explainRefusal(credential: Credential, config: Config): RefusalExplanation;
  /** What it adds to the description that names a shared-store entry (a certificate's thumbprint). */
  storeDescription(material: CredentialMaterial): readonly DescriptionPart[];
  /** Which secret material the store's key is derived from. */
  storeKeyMaterial(material: CredentialMaterial): StoreKeyMaterial;
}
