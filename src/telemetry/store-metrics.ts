import { Counter, Gauge, type Registry } from 'prom-client';
import { ANOMALY_KINDS, type StoreOperation, type StoreResult, type TokenStoreObserver } from '../store/index.js';

/** The results each operation reports (store/contract.ts), exported at 0 from the start so an alert on increase() sees the first. */
const RESULTS: Readonly<Record<StoreOperation, readonly StoreResult[]>> = {
  read: ['hit', 'miss', 'invalid', 'error', 'timeout'],
  write: ['ok', 'error', 'timeout'],
  lease: ['ok', 'taken', 'error', 'timeout'],
  delete: ['ok', 'error', 'timeout'],
};

/** The shared token store's metrics: its health, its operations, and the tokens taken from it. */
export interface StoreMetrics {
  readonly observer: TokenStoreObserver;
  /** A token was taken from the store instead of fetched. */
  adopted(): void;
}

/**
 * Registers the token store's metrics (docs/token-store.md), only when a store
 * is configured: a proxy without one has no store to call down. The store counts as up until an
 * operation says otherwise (a proxy whose credentials are all pass-through may not need it for a
 * long time, and is not down meanwhile).
 */
export function createStoreMetrics(registry: Registry): StoreMetrics {
  const up = new Gauge({
    name: 'ticket_auth_proxy_token_store_up',
    help: 'Whether the last token store operation (or background check) succeeded: 1, or 0.',
    registers: [registry],
  });
  up.set(1);
  const operations = new Counter({
    name: 'ticket_auth_proxy_token_store_operations_total',
    help: 'Token store operations, by operation (read, write, lease, delete) and result.',
    labelNames: ['operation', 'result'] as const,
    registers: [registry],
  });
  const children = new Map<string, Counter.Internal>();
  for (const [operation, results] of Object.entries(RESULTS)) {
    for (const result of results) {
      const child = operations.labels(operation, result);
      child.inc(0);
      children.set(`${operation}:${result}`, child);
    }
  }
  const adoptions = new Counter({
    name: 'ticket_auth_proxy_token_adoptions_total',
    help: 'Tokens taken from the token store instead of fetched.',
    registers: [registry],
  });
  adoptions.inc(0);
  const anomalies = new Counter({
    name: 'ticket_auth_proxy_token_store_anomalies_total',
    help: 'Things in the token store no proxy writes (someone else writes the prefix), by kind; each ignored, cut or replaced.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  for (const kind of ANOMALY_KINDS) anomalies.labels(kind).inc(0);
  return {
    observer: {
      onOperation(operation, result) {
        (children.get(`${operation}:${result}`) ?? operations.labels(operation, result)).inc();
      },
      onHealth(isUp) {
        up.set(isUp ? 1 : 0);
      },
      onAnomaly(kind) {
        anomalies.labels(kind).inc();
      },
    },
    adopted: () => adoptions.inc(),
  };
}
