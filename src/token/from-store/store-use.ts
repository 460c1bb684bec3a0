/**
 * Credentials shared through a token store, as the wiring sets them up (docs/token-store.md): the
 * configured credential's namespace derived from what it is made of now and derived anew when its
 * secret, key, certificate, DPoP key or the store key file changes; a pass-through credential's
 * derived on its first use from its own secret. Each token source is handed the supply that
 * consults the store (store-supply.ts).
 */
import type { Config } from '../../config/config.js';
import type { Clock } from '../../core/clock.js';
import type { Log } from '../../core/log.js';
import type { TokenStore } from '../../store/index.js';
import type { AuthMethod, Credential, CredentialMaterial, CredentialTarget } from '../client-auth/index.js';
import type { DpopClient } from '../dpop/index.js';
import { storeSupply } from './store-supply.js';
import { StoreNamespace, storeIdentity, type StoreIdentity } from './credential-namespace.js';
import type { BackoffPolicy } from '../refresh-schedule.js';
import type { TokenSupply } from '../token-supply.js';

/** What every shared credential of a process has in common. */
export interface StoreUseOptions {
  store: TokenStore;
  settings: Pick<Config, 'tokenUrl' | 'issuerUrl' | 'tokenScope' | 'tokenParams' | 'dpop' | 'tokenFetchTimeoutMs' | 'dpopKeyFile'>;
  /**
   * `TOKEN_STORE_TIMEOUT_MS`: what the store's operations before a fetch may take in all, a
   * pass-through credential's wait for its key's derivation included.
   */
  storeTimeoutMs: number;
  dpop: DpopClient | undefined;
  /** `TOKEN_STORE_KEY_FILE`'s content now, if set. */
  keyFile: () => Uint8Array | undefined;
  clock: Clock;
  random: () => number;
  log: Log;
}

/** The supply a token source is given: the store's, around its own fetch, with the source's backoff. */
export type WithStore = (own: TokenSupply, backoff: BackoffPolicy) => TokenSupply;

function dpopKeyOf(o: StoreUseOptions): { thumbprint: string; fromFile: boolean } | undefined {
  return o.dpop === undefined ? undefined : { thumbprint: o.dpop.prover.key().thumbprint, fromFile: o.settings.dpopKeyFile !== undefined };
}

function withStore(o: StoreUseOptions, namespace: StoreNamespace, deriveWithinMs?: number): WithStore {
  const { store, clock, random, dpop } = o;
  return (own, backoff) =>
    storeSupply(own, {
      store,
      namespace,
      fetchTimeoutMs: o.settings.tokenFetchTimeoutMs,
      storeTimeoutMs: o.storeTimeoutMs,
      backoff,
      clock,
      random,
      dpop,
      deriveWithinMs,
    });
}

/** A token source as the configured credential's watches reach it. */
export interface StoreUseTarget extends CredentialTarget {
  /** The token to use now, if a valid one is held. */
  current(): string | undefined;
}

type ConfiguredOptions = StoreUseOptions & { method: AuthMethod; clientId: string; material: () => CredentialMaterial };

function configuredIdentity(o: ConfiguredOptions): StoreIdentity {
  return storeIdentity({
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
export function configuredStoreUse(o: ConfiguredOptions): ConfiguredStoreUse | undefined {
  const identity = configuredIdentity(o);
  if (identity.shared) return new ConfiguredStoreUse(o);
  o.log.warn({ credential: 'configured', reason: identity.reason }, 'the token store is not used for this credential');
  return undefined;
}

/** The configured credential shared through the store. */
export class ConfiguredStoreUse {
  private readonly namespace: StoreNamespace;
  /** The supply its token source is given. */
  readonly withStore: WithStore;

  constructor(private readonly o: ConfiguredOptions) {
    this.namespace = new StoreNamespace(o.store, o.clock);
    this.withStore = withStore(o, this.namespace);
    this.update();
  }

  /** What the credential is made of may have changed: derives its namespace anew if so; true when it did. */
  update(): boolean {
    const identity = configuredIdentity(this.o);
    return this.namespace.use(identity.shared ? identity.input : undefined);
  }

  /**
   * What the credential's watches tell `source`, its namespace brought up to date first: a new
   * secret is fetched with through the new namespace's lease. A change that leaves the namespace
   * as it was (a rotated client assertion, which the store key is not derived from) fetches
   * nothing while a valid token is held: that token is the fleet's, and stays good.
   */
  target(source: StoreUseTarget): CredentialTarget {
    return {
      setCredential: (credential) => {
        this.update();
        source.setCredential(credential);
      },
      refreshNow: (reason) => {
        if (!this.update() && source.current() !== undefined) {
          this.o.log.info({ credential: 'configured', reason }, 'the shared token stays in use');
          return;
        }
        source.refreshNow(reason);
      },
    };
  }
}

/** Pass-through credentials' store keys derived at most this many a minute (each costs scrypt's work). */
export const DERIVATIONS_PER_MINUTE = 10;

/**
 * The supply of each pass-through credential, keyed by its own secret (a wrong secret derives
 * another key, and finds nothing); undefined when they are not shared (tokens bound to a DPoP key
 * generated here, said once). A credential's key is derived on its first use. At most
 * {@link DERIVATIONS_PER_MINUTE} derivations start a minute: past that a credential fetches alone,
 * as without a store, and its key is derived at a later attempt (its refresh) if it is still in
 * use. An attempt waits for a derivation under way at most the store timeout, then fetches alone.
 * A credential the token endpoint rejected derives nothing while the rejection is remembered: the
 * cache answers it before it gets here.
 */
export function passthroughStoreUse(
  o: StoreUseOptions & { method: AuthMethod },
): ((credential: Credential) => WithStore | undefined) | undefined {
  const dpopKey = dpopKeyOf(o);
  const probe = storeIdentity({
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
  return (credential) => {
    const identity = storeIdentity({
      settings: o.settings,
      method: o.method,
      clientId: credential.clientId,
      material: { clientSecret: credential.clientSecret },
      dpopKey: dpopKeyOf(o),
      keyFile: undefined,
    });
    if (!identity.shared) return undefined;
    const { input } = identity;
    const namespace = new StoreNamespace(o.store, o.clock);
    const supplyWith = withStore(o, namespace, o.storeTimeoutMs);
    return (own, backoff) => {
      const supply = supplyWith(own, backoff);
      return {
        obtain(request) {
          if (!namespace.shared && mayDerive()) namespace.use(input);
          return supply.obtain(request);
        },
      };
    };
  };
}
