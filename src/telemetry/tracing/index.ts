/**
 * Traces (docs/operations.md, "Traces"): off unless a collector is named. This file loads nothing
 * of the tracer: tracer.ts is imported only when tracing is on.
 */
import type { TokenSourceObserver } from '../../token/token-state.js';
import type { Metrics, RouteMetrics } from '../metrics.js';
import type { RouteTracing, Tracing, TracingDeps } from './tracer.js';
import type { TracingSettings } from './settings.js';

export { checkTracingSettings, type TracingSettings } from './settings.js';
export type { RouteTracing, TracedRoute, Tracing } from './tracer.js';
export { checkCollector } from './collector-check.js';

/** Loads the tracer and starts tracing; undefined without settings (tracing off). */
export async function startTracing(settings: TracingSettings | undefined, deps: TracingDeps): Promise<Tracing | undefined> {
  if (settings === undefined) return undefined;
  const { createTracing } = await import('./tracer.js');
  return createTracing(settings, deps);
}

/**
 * A route's metrics with its token fetches also making their spans, linked from the route's
 * requests that waited: what its token sources are handed when tracing is on.
 */
export function withRouteTracing(metrics: RouteMetrics, tracing: RouteTracing | undefined): RouteMetrics {
  if (tracing === undefined) return metrics;
  const traced = (observer: TokenSourceObserver): TokenSourceObserver => ({
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
  return { ...metrics, configuredToken: traced(metrics.configuredToken), passthroughToken: traced(metrics.passthroughToken) };
}

/** The metrics with the store's operations also making their spans, when tracing is on. */
export function withTracing(metrics: Metrics, tracing: Tracing | undefined): Metrics {
  const store = metrics.tokenStore;
  if (tracing === undefined || store === undefined) return metrics;
  return {
    ...metrics,
    tokenStore: {
      ...store,
      onOperation(operation, result) {
        store.onOperation?.(operation, result);
        tracing.storeOperation(operation, result);
      },
    },
  };
}
