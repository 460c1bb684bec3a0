/**
 * The shared token store: one token per credential across every proxy that holds it, through
 * Redis or Valkey (`TOKEN_STORE_URL`). The lifecycle sees {@link TokenStore} and
 * {@link CredentialStore} alone (`token-store.ts` says how to use them); the wiring:
 *
 * 1. `checkStoreSettings` is handed to the loader; its result is undefined without a store.
 * 2. `openRedisTokenStore({ settings, fetchTimeoutMs, tls, clock, random, log, observer })` at
 *    start; then `need()`, and `credential({ description, keyMaterial })` for the configured
 *    credential before its first read (the key is derived while the client library loads).
 * 3. `watchStoreFiles`: a new password goes to `setPassword`, new key material to the lifecycle
 *    (a new `credential()`); a rotated `CA_FILE` or client certificate goes to `setTls`.
 * 4. `close()` at shutdown.
 *
 * Unit tests and the fleet simulation use `createMemoryTokenStore` on a `MemoryStoreServer`
 * instead, on their clock; `sharedDeriver(scryptDeriver())` derives each distinct key once for all.
 */
export type {
  CredentialKeyInput,
  CredentialStore,
  DeleteResult,
  Lease,
  LeaseResult,
  ReadResult,
  RecordResult,
  SharedFailure,
  StoredToken,
  StoreOperation,
  StoreResult,
  StoreUnavailable,
  TokenStore,
  TokenStoreObserver,
  UnavailableReason,
  WriteResult,
} from './token-store.js';
export { LEASE_MARGIN_MS, openRedisTokenStore, type OpenStoreOptions, type RedisTokenStore } from './open-store.js';
export { checkStoreSettings, MIN_KEY_BYTES, type StoreSettings } from './settings.js';
export { watchStoreFiles, type StoreFilesOptions } from './store-files.js';
export { createMemoryTokenStore, MemoryStoreServer, type MemoryFault } from './memory-backend.js';
export { describeCredential, FORMAT_VERSION, scryptDeriver, sharedDeriver, type KeyDeriver } from './store-key.js';
