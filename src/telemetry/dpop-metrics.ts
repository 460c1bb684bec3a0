import { Counter, type Registry } from 'prom-client';
import type { DpopObserver } from '../token/dpop/index.js';

/**
 * DPoP counters by `target` (`token`, `gateway`). A proof is made per forwarded request: counted
 * in plain numbers and added when scraped, as the request counts are.
 */
export function dpopMetrics(registry: Registry): DpopObserver {
  const TARGETS = ['token', 'gateway'] as const;
  const proofs = { token: 0, gateway: 0 };
  const proofCounter: Counter<'target'> = new Counter({
    name: 'ticket_auth_proxy_dpop_proofs_total',
    help: 'DPoP proofs signed, by the server they were sent to (token endpoint or gateway).',
    labelNames: ['target'] as const,
    registers: [registry],
    collect() {
      for (const t of TARGETS) {
        proofCounter.labels(t).inc(proofs[t]);
        proofs[t] = 0;
      }
    },
  });
  const nonces = new Counter({
    name: 'ticket_auth_proxy_dpop_nonce_requests_total',
    help: 'Answers asking for a DPoP nonce (use_dpop_nonce), by server (token endpoint or gateway).',
    labelNames: ['target'] as const,
    registers: [registry],
  });
  for (const t of TARGETS) nonces.labels(t).inc(0);
  return {
    proofMade(target) {
      proofs[target] += 1;
    },
    nonceRequested(target) {
      nonces.labels(target).inc();
    },
  };
}
