import { STATUS_CODES } from '../core/node-http.js';
import { Counter, type Registry } from 'prom-client';
import type { ProxyObserver } from '../proxy/recorder.js';
import { BoundHistogram, type DurationSeries } from './bound-histogram.js';

/** Methods get their own label value; any other method is counted as `other`, so labels stay bounded. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE'] as const;

/**
 * Request durations' bucket bounds, in seconds: the latencies an operator sets an objective at
 * (10 ms to 1 s), a slow answer (2.5 s) and one near the upstream timeout's default (10 s and
 * above). Each method seen exports these, `+Inf`, a sum and a count.
 */
export const REQUEST_DURATION_BOUNDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10] as const;

/** Per-method series: plain numbers on the hot path, handed to prom-client when scraped. */
interface MethodChildren {
  duration: DurationSeries;
  codes: Map<number, RequestCount>;
  label: string;
}

interface RequestCount {
  child: Counter.Internal;
  pending: number;
}

/** 499: the caller left before the answer (docs/operations.md, "Metrics"), not a code HTTP defines. */
const CALLER_LEFT = 499;

/**
 * The `code` label: a status code HTTP defines as itself (and the proxy's own 499), any other (a
 * gateway may answer 299 or 599) as its class (`2xx`, `5xx`), so the values stay a fixed set.
 */
function codeLabel(status: number): string {
  return STATUS_CODES[status] !== undefined || status === CALLER_LEFT ? String(status) : `${Math.trunc(status / 100)}xx`;
}

/** The request metrics: the observer of each route's requests, which counts them under its name. */
export interface RequestMetrics {
  /** The observer of `route`'s requests (every request of one route, the listener's refusals under it too). */
  route(route: string): ProxyObserver;
  /** The observer of the requests no route takes (an empty `route`): refusals only, so no counter at 0. */
  unrouted(): ProxyObserver;
}

/** The request counters and the duration histogram, observing the request path, each series by route. */
export function requestMetrics(registry: Registry): RequestMetrics {
  const requestCounts: RequestCount[] = [];
  const requests = new Counter({
    name: 'ticket_auth_proxy_requests_total',
    help: "Answers on the proxy listeners, by route, method and status code (the proxy's own errors included).",
    labelNames: ['route', 'method', 'code'] as const,
    registers: [registry],
    // Requests are counted in plain numbers and added here, when scraped.
    collect() {
      for (const c of requestCounts) {
        if (c.pending === 0) continue;
        c.child.inc(c.pending);
        c.pending = 0;
      }
    },
  });
  const requestDuration = new BoundHistogram({
    name: 'ticket_auth_proxy_request_duration_seconds',
    help: "Time from a request's arrival to the end of its answer, by route and method.",
    labelNames: ['route', 'method'],
    bounds: REQUEST_DURATION_BOUNDS,
    registry,
  });
  const unauthorized = new Counter({
    name: 'ticket_auth_proxy_upstream_unauthorized_total',
    help: 'Gateway 401 answers, by route and whether the request was replayed with a new token.',
    labelNames: ['route', 'replayed'] as const,
    registers: [registry],
  });

  const stalls = new Counter({
    name: 'ticket_auth_proxy_upstream_stalls_total',
    help:
      'Exchanges ended because a body stayed silent longer than UPSTREAM_IDLE_TIMEOUT_MS, by direction: ' +
      "the caller's request body, the gateway's answer, or the caller's reading of it (send).",
    labelNames: ['direction'] as const,
    registers: [registry],
  });
  const stallChildren = { request: stalls.labels('request'), response: stalls.labels('response'), send: stalls.labels('send') };
  for (const child of Object.values(stallChildren)) child.inc(0);
  const shed = new Counter({
    name: 'ticket_auth_proxy_overload_shed_total',
    help: 'New requests answered 503 overloaded because memory was above 90 % of its limit.',
    registers: [registry],
  });
  const reset = new Counter({
    name: 'ticket_auth_proxy_overload_reset_total',
    help: 'Exchanges ended while shedding because their callers had taken nothing of their answer for 5 s.',
    registers: [registry],
  });

  const observers = new Map<string, ProxyObserver>();
  /** The observer of one route: its per-method series bound once, when it is made. */
  const forRoute = (route: string, forwards: boolean): ProxyObserver => {
    const methodChildren = new Map<string, MethodChildren>();
    const childrenFor = (method: string): MethodChildren => {
      let c = methodChildren.get(method);
      if (c === undefined) {
        const label = (METHODS as readonly string[]).includes(method) ? method : 'other';
        c =
          label === method ? { duration: requestDuration.child({ route, method: label }), codes: new Map(), label } : childrenFor('other');
        methodChildren.set(method, c);
      }
      return c;
    };
    for (const m of METHODS) childrenFor(m);
    const replayedTrue = unauthorized.labels(route, 'true');
    const replayedFalse = unauthorized.labels(route, 'false');
    // Exported at 0 from the start, as the rejected fetches are: the first forced refresh is an increase.
    if (forwards) replayedTrue.inc(0);
    return {
      requestEnded(method, status, seconds) {
        const c = methodChildren.get(method) ?? (methodChildren.size < 64 ? childrenFor(method) : childrenFor('other'));
        let count = c.codes.get(status);
        if (count === undefined) {
          count = { child: requests.labels(route, c.label, codeLabel(status)), pending: 0 };
          c.codes.set(status, count);
          requestCounts.push(count);
        }
        count.pending += 1;
        observeDuration(c.duration, seconds);
      },
      upstreamUnauthorized(replayed) {
        (replayed ? replayedTrue : replayedFalse).inc();
      },
      upstreamStalled(direction) {
        stallChildren[direction].inc();
      },
      requestShed() {
        shed.inc();
      },
      exchangeReset() {
        reset.inc();
      },
    };
  };
  return {
    route(route) {
      let observer = observers.get(route);
      if (observer === undefined) observers.set(route, (observer = forRoute(route, true)));
      return observer;
    },
    unrouted() {
      let observer = observers.get('');
      if (observer === undefined) observers.set('', (observer = forRoute('', false)));
      return observer;
    },
  };
}

/** One observation of a duration series (bound-histogram.ts): a bucket search and three additions. */
export function observeDuration(series: DurationSeries, seconds: number): void {
  const bounds = series.bounds;
  let i = 0;
  while (i < bounds.length && seconds > bounds[i]!) i++;
  series.buckets[i]! += 1;
  series.sum += seconds;
  series.count += 1;
}
