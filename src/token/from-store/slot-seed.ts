/**
 * A credential's slot in a shared token store (docs/token-store.md): its seed (the description
 * that makes two proxies' credentials the same, and the key material the slot's key is derived
 * from), and the slot as it is now, derived anew when the seed changes. Proxies share a token only
 * when their seeds are equal, so nothing written under one credential is read under another.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../../config/config.js';
import type { Clock } from '../../core/clock.js';
import { describeCredential, type SlotSeed, type Slot, type TokenStore } from '../../store/index.js';
import type { AuthMethod, CredentialMaterial } from '../client-auth/index.js';

/** What a credential is made of beside its method's own material. */
export interface CredentialParts {
  readonly settings: Pick<Config, 'tokenUrl' | 'issuerUrl' | 'tokenScope' | 'tokenParams' | 'dpop'>;
  /** The method its token requests are authenticated with. */
  readonly method: AuthMethod;
  readonly clientId: string;
  /** The method's secret material now (the secret, the assertion key, the client certificate). */
  readonly material: CredentialMaterial;
  /** With DPoP: the key the tokens are bound to, and whether it comes from DPOP_KEY_FILE (else it was generated here). */
  readonly dpopKey: { readonly thumbprint: string; readonly fromFile: boolean } | undefined;
  /** TOKEN_STORE_KEY_FILE's content; never given for a pass-through credential, whose key is its own secret. */
  readonly keyFile: Uint8Array | undefined;
}

/** How a credential is shared: in the slot this seed derives, or not at all (and why, said once). */
export type Sharing = { readonly shared: true; readonly seed: SlotSeed } | { readonly shared: false; readonly reason: string };

/** The description's format: a change makes a new slot, never a misread entry. */
const DESCRIPTION_FORMAT = 'ticket-auth-proxy credential 1';

/**
 * The credential's slot seed. Its description holds the token URL (or the issuer whose
 * metadata names it), client id, method,
 * scope, `TOKEN_PARAMS` (sorted: their order changes nothing), the DPoP mode and key thumbprint,
 * and what the method adds (a client certificate's thumbprint). Its key material is the method's
 * secret or private key; with `TOKEN_STORE_KEY_FILE`, the key file, followed by that secret when
 * there is one, so a rotated secret is a new slot still. Not shared: tokens bound to a DPoP
 * key generated in this process, and a method without a secret when no key file is given.
 */
export function slotSeed(options: CredentialParts): Sharing {
  const { settings, method, dpopKey, keyFile } = options;
  if (dpopKey !== undefined && !dpopKey.fromFile) {
    return {
      shared: false,
      reason:
        'its tokens are bound to a DPoP key generated in this process, which no other proxy holds; set DPOP_KEY_FILE to the ' +
        'same key on every proxy to share them',
    };
  }
  const own = method.storeKeyMaterial(options.material);
  if (own.from === 'key_file' && keyFile === undefined) {
    return {
      shared: false,
      reason: `TOKEN_AUTH_METHOD=${method.name} has no secret to derive the store key from; set TOKEN_STORE_KEY_FILE to share its tokens`,
    };
  }
  const params = settings.tokenParams.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).sort();
  const parts: (readonly [string, string])[] = [
    ['format', DESCRIPTION_FORMAT],
    settings.issuerUrl === undefined ? ['token_url', settings.tokenUrl ?? ''] : ['issuer', settings.issuerUrl],
    ['client_id', options.clientId],
    ['method', method.name],
    ['scope', settings.tokenScope ?? ''],
    ['params', params.join('&')],
    ['dpop', dpopKey === undefined ? 'off' : `${settings.dpop} ${dpopKey.thumbprint}`],
    ...method.storeDescription(options.material),
  ];
  const secret = own.from === 'key_file' ? undefined : own.secret;
  const keyMaterial =
    keyFile === undefined ? secret! : secret === undefined ? keyFile : Buffer.concat([lengthPrefix(keyFile.length), keyFile, secret]);
  return { shared: true, seed: { description: describeCredential(parts), keyMaterial } };
}

function lengthPrefix(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/**
 * One credential's slot as it is now: derived (scrypt, in the store) when the credential is first
 * seeded and again when its seed changes (a new slot). Holds a digest of the seed to notice a
 * change, never the key material itself.
 */
export class CurrentSlot {
  private id: string | undefined;
  private pending: Promise<Slot | undefined> = Promise.resolve(undefined);
  /** The slot, once its derivation is done: a field, read by every attempt. */
  ready: Slot | undefined;

  constructor(
    private readonly store: TokenStore,
    private readonly clock: Clock,
  ) {}

  /** Uses the slot of `seed` from now on (undefined: the credential is not shared); true when that is another slot. */
  use(seed: SlotSeed | undefined): boolean {
    const id = seed && createHash('sha256').update(seed.description).update('\0').update(seed.keyMaterial).digest('base64');
    if (id === this.id) return false;
    this.id = id;
    this.ready = undefined;
    const pending: Promise<Slot | undefined> =
      seed === undefined
        ? Promise.resolve(undefined)
        : this.store.slot(seed).then((derived) => {
            if (this.pending === pending) this.ready = derived;
            return derived;
          });
    this.pending = pending;
    return true;
  }

  /** Whether the credential is shared now (its slot may still be being derived). */
  get shared(): boolean {
    return this.id !== undefined;
  }

  /** The slot, once derived; waiting at most `withinMs` when given (undefined after that). */
  current(withinMs?: number): Promise<Slot | undefined> {
    if (this.ready !== undefined || withinMs === undefined) return this.ready !== undefined ? Promise.resolve(this.ready) : this.pending;
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve(undefined), withinMs);
      void this.pending.then((derived) => {
        this.clock.clearTimeout(timer);
        resolve(derived);
      });
    });
  }
}
