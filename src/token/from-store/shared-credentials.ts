/**
 * Credentials shared through a token store, as the wiring sets them up (docs/token-store.md): the
 * configured credential's slot seeded from what it is made of now and derived anew when its
 * secret, key, certificate, DPoP key or the store key file changes; a pass-through credential's
 * derived on its first use from its own secret. Each is given the supply that consults the store
 * around its own fetch (store-supply.ts), for its refresh loop.
 */
import type { Config } from '../../config/config.js';
import type { Clock } from '../../core/clock.js';
import type { Log } from '../../core/log.js';
import type { TokenStore } from '../../store/index.js';
import type { AuthMethod, Credential, CredentialMaterial, CredentialTarget } from '../client-auth/index.js';
import type { DpopClient } from '../dpop/index.js';
import type { RefreshLoop } from '../refresh-loop.js';
import type { BackoffPolicy } from '../refresh-schedule.js';
import type { TokenSupply } from '../token-supply.js';
import { CurrentSlot, slotSeed, type Sharing } from './slot-seed.js';
import { storeSupply } from './store-supply.js';

/** What every shared credential of a process has in common. */
export interface SharingOptions {
  store: TokenStore;
  /**
   * The settings a slot is described by, `TOKEN_FETCH_TIMEOUT_MS`, and `TOKEN_WAIT_TIMEOUT_MS` (how
   * long a pass-through key's derivation is waited for).
   */
  settings: Pick<
    Config,
    'tokenUrl' | 'issuerUrl' | 'tokenScope' | 'tokenParams' | 'dpop' | 'tokenFetchTimeoutMs' | 'tokenWaitTimeoutMs' | 'dpopKeyFile'
  >;
  /** `TOKEN_STORE_TIMEOUT_MS`: what the store's operations before a fetch may take in all. */
  storeTimeoutMs: number;
  dpop: DpopClient | undefined;
  /** `TOKEN_STORE_KEY_FILE`'s content now, if set. */
  keyFile: () => Uint8Array | undefined;
  clock: Clock;
  random: () => number;
  log: Log;
}

function dpopKeyOf(o: SharingOptions): { thumbprint: string; fromFile: boolean } | undefined {
  return o.dpop === undefined ? undefined : { thumbprint: o.dpop.prover.key().thumbprint, fromFile: o.settings.dpopKeyFile !== undefined };
}

/** The store's supply around `own`, for the credential in `slot`. */
function supplyIn(o: SharingOptions, slot: CurrentSlot, own: TokenSupply, backoff: BackoffPolicy, deriveWithinMs?: number): TokenSupply {
  const { store, clock, random, dpop } = o;
  const fetchTimeoutMs = o.settings.tokenFetchTimeoutMs;
  return storeSupply(own, { store, slot, fetchTimeoutMs, storeTimeoutMs: o.storeTimeoutMs, backoff, clock, random, dpop, deriveWithinMs });
}

type ConfiguredOptions = SharingOptions & { method: AuthMethod; clientId: string; material: () => CredentialMaterial };

function configuredSharing(o: ConfiguredOptions): Sharing {
  return slotSeed({
    settings: o.settings,
    method: o.method,
    clientId: o.clientId,
    material: o.material(),
    dpopKey: dpopKeyOf(o),
    keyFile: o.keyFile(),
  });
}

/**
 * The configured credential shared through the store, or undefined when its tokens cannot be
 * shared (a method without a secret and no key file, a DPoP key generated here): said once.
 */
export function shareConfigured(o: ConfiguredOptions): SharedConfigured | undefined {
  const sharing = configuredSharing(o);
  if (sharing.shared) return new SharedConfigured(o);
  o.log.warn({ credential: 'configured', reason: sharing.reason }, 'the token store is not used for this credential');
  return undefined;
}

/** The configured credential shared through the store. */
export class SharedConfigured {
  private readonly slot: CurrentSlot;

  constructor(private readonly o: ConfiguredOptions) {
    this.slot = new CurrentSlot(o.store, o.clock);
    this.update();
  }

  /** The supply its refresh loop is given: the store's, around `own`, with the loop's backoff. */
  supply(own: TokenSupply, backoff: BackoffPolicy): TokenSupply {
    return supplyIn(this.o, this.slot, own, backoff);
  }

  /** What the credential is made of may have changed: derives its slot anew if so; true when it did. */
  update(): boolean {
    const sharing = configuredSharing(this.o);
    return this.slot.use(sharing.shared ? sharing.seed : undefined);
  }

  /**
   * What the credential's watches tell `loop`, its slot brought up to date first: a new secret is
   * fetched with through the new slot's lease. A change that leaves the slot as it was (a rotated
   * client assertion, which the store key is not derived from) fetches nothing while a valid
   * token is held: that token is the fleet's, and stays good.
   */
  target(loop: Pick<RefreshLoop, 'held' | 'setCredential' | 'refreshNow'>): CredentialTarget {
    return {
      setCredential: (credential) => {
        this.update();
        loop.setCredential(credential);
      },
      refreshNow: (reason) => {
        if (!this.update() && loop.held.authorization() !== undefined) {
          this.o.log.info({ credential: 'configured', reason }, 'the shared token stays in use');
          return;
        }
        loop.refreshNow(reason);
      },
    };
  }
}

/** Pass-through credentials' store keys derived at most this many a minute (each costs scrypt's work). */
export const DERIVATIONS_PER_MINUTE = 10;

/** The supply of one pass-through credential: the store's around its own fetch, with its loop's backoff. */
export type PassthroughSupply = (credential: Credential, own: TokenSupply, backoff: BackoffPolicy) => TokenSupply;

/**
 * The supply of each pass-through credential, in a slot of its own secret (a wrong secret derives
 * another key, and finds nothing); undefined when they are not shared (tokens bound to a DPoP key
 * generated here, said once). A credential's key is derived on its first use. At most
 * {@link DERIVATIONS_PER_MINUTE} derivations start a minute: past that a credential fetches alone,
 * as without a store, and its key is derived at a later attempt (its refresh) if it is still in
 * use. An attempt waits for a derivation under way at most `TOKEN_WAIT_TIMEOUT_MS`, as long as its
 * caller waits for a token (on a tenth of a core one derivation takes seconds), then fetches alone;
 * the store's own budget starts after it.
 * A credential the token endpoint rejected derives nothing while the rejection is remembered: the
 * cache answers it before it gets here.
 */
export function sharePassthrough(o: SharingOptions & { method: AuthMethod }): PassthroughSupply | undefined {
  const dpopKey = dpopKeyOf(o);
  const probe = slotSeed({
    settings: o.settings,
    method: o.method,
    clientId: '',
    material: { clientSecret: '' },
    dpopKey,
    keyFile: undefined,
  });
  if (!probe.shared) {
    o.log.warn({ credential: 'passthrough', reason: probe.reason }, 'the token store is not used for pass-through credentials');
    return undefined;
  }
  /** When the derivations of the last minute started. */
  const started: number[] = [];
  const mayDerive = (): boolean => {
    const now = o.clock.now();
    while (started.length > 0 && started[0]! <= now - 60_000) started.shift();
    if (started.length >= DERIVATIONS_PER_MINUTE) return false;
    started.push(now);
    return true;
  };
  return (credential, own, backoff) => {
    const { clientId, clientSecret } = credential;
    const sharing = slotSeed({ settings: o.settings, method: o.method, clientId, material: { clientSecret }, dpopKey, keyFile: undefined });
    if (!sharing.shared) return own;
    const slot = new CurrentSlot(o.store, o.clock);
    const supply = supplyIn(o, slot, own, backoff, o.settings.tokenWaitTimeoutMs);
    return {
      obtain(request) {
        if (!slot.shared && mayDerive()) slot.use(sharing.seed);
        return supply.obtain(request);
      },
      rejected: (token) => supply.rejected(token),
    };
  };
}
