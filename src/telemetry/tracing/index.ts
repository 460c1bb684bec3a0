/**
 * Traces (docs/operations.md, "Traces"): off unless a collector is named. This file loads nothing
 * of the tracer: tracer.ts is imported only when tracing is on.
 */
import type { TokenSourceObserver } from '../../token/token-state.js';
import type { Metrics, RouteMetrics } from '../metrics.js';
import type { Tracing, TracingDeps } from './tracer.js';
import type { TracingSettings } from './settings.js';

export { checkTracingSettings, type TracingSettings } from './settings.js';
export type { Tracing } from './tracer.js';
export { checkCollector } from './collector-check.js';

/** Loads the tracer and starts tracing; undefined without settings (tracing off). */
export async function startTracing(settings: TracingSettings | undefined, deps: TracingDeps): Promise<Tracing | undefined> {
  if (settings === undefined) return undefined;
  const { createTracing } = await import('./tracer.js');
  return createTracing(settings, deps);
}

/**
 * The metrics' observers of token fetches and store operations, each also making its span: what
 * the token sources and the store are handed when tracing is on.
 */
export function withTracing(metrics: Metrics, tracing: Tracing | undefined): Metrics {
  if (tracing === undefined) return metrics;
  const tokenObserver = (observer: TokenSourceObserver): TokenSourceObserver => ({
    ...observer,
    onFetch(outcome, seconds) {
      observer.onFetch?.(outcome, seconds);
      tracing.tokenFetched(outcome, seconds);
    },
    onAdopt() {
      observer.onAdopt?.();
      tracing.tokenAdopted();
    },
  });
  const routes = new Map<string, RouteMetrics>();
  const store = metrics.tokenStore;
  return {
    ...metrics,
    route(name) {
      let traced = routes.get(name);
      if (traced === undefined) {
        const counted = metrics.route(name);
        traced = {
          ...counted,
          configuredToken: tokenObserver(counted.configuredToken),
          passthroughToken: tokenObserver(counted.passthroughToken),
        };
        routes.set(name, traced);
      }
      return traced;
    },
    tokenStore:
      store === undefined
        ? undefined
        : {
            ...store,
            onOperation(operation, result) {
              store.onOperation?.(operation, result);
              tracing.storeOperation(operation, result);
            },
          },
  };
}
