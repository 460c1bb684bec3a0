/**
 * The shared token store: one token per credential across every proxy that holds it, through
 * Redis or Valkey (`TOKEN_STORE_URL`). What a store is, its contract, is `contract.ts`: one slot
 * per credential. A slot's operations go through two layers: `sealed-store.ts` (the entry format
 * of `entry.ts` under the slot's key of `slot-key.ts`, with the store's health of `health.ts`),
 * then the backend (`redis-backend.ts`: the client and the scripts of `scripts.ts`). The token
 * side, where a token comes from with a store, is `token/from-store/`.
 *
 * 1. `checkStoreSettings` is handed to the loader; its result is undefined without a store.
 * 2. `openTokenStore({ settings, fetchTimeoutMs, tls, clock, random, log, observer, watchFiles })`
 *    at start (`open-store.ts`): its `tokens` are the store; `slot({ description, keyMaterial })`
 *    for the configured credential before its first read (the key is derived while the client
 *    library loads).
 * 3. With `watchFiles`, a new password reconnects with it and new key material reaches
 *    `onKeyFile` listeners (a new `slot()`); a rotated `CA_FILE` or client certificate goes to `setTls`.
 * 4. `close()` at shutdown.
 *
 * Unit tests and the fleet simulation use `createMemoryTokenStore` on a `MemoryStoreServer`
 * instead, on their clock; `sharedDeriver(scryptDeriver())` derives each distinct key once for all.
 */
export { ANOMALY_KINDS, LEASE_LIMIT_MS } from './contract.js';
export type {
  AnomalyKind,
  SlotSeed,
  Slot,
  DeleteResult,
  Lease,
  LeaseResult,
  ReadResult,
  RecordResult,
  FailureRecord,
  StoredToken,
  StoreOperation,
  StoreResult,
  StoreUnavailable,
  TokenStore,
  TokenStoreObserver,
  UnavailableReason,
  WriteResult,
} from './contract.js';
export { LEASE_MARGIN_MS, openTokenStore, type OpenedStore, type OpenStoreOptions } from './open-store.js';
export { checkStoreSettings, MIN_KEY_BYTES, type StoreSettings } from './settings.js';
export { functionLibrary, LIBRARY_NAME } from './scripts.js';
export { watchSecretFiles, type SecretFilesOptions } from './secret-files.js';
export { createMemoryTokenStore, MemoryStoreServer, type MemoryFault } from './memory-backend.js';
export { describeCredential, FORMAT_VERSION, scryptDeriver, sharedDeriver, type KeyDeriver } from './slot-key.js';
