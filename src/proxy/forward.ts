import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { MethodNotAllowedError, NotProxiedError, OverloadedError, ProxyError, UpgradeNotSupportedError } from '../core/errors.js';
import type { LoadShedding } from '../overload/overload-guard.js';
import { answerProblem } from './answer-problem.js';
import { passthroughOr } from './authorizer.js';
import { readCallerRequest, type CallerRequest } from './caller-request.js';
import { Exchange, type ForwardSettings } from './exchange.js';
import { checkTarget } from './path-guard.js';
import type { Route } from './route.js';

/** A route reached through a path prefix of a listener (`/eu`), removed before forwarding. */
export interface Mount {
  readonly prefix: string;
  readonly route: Route;
}

/** The routes one listener serves: its mounts, and the route of the paths no mount takes. */
export interface ListenerRoutes {
  readonly mounts: readonly Mount[];
  /** The route of the listener's paths no mount takes; without one, those get `404 not_proxied`. */
  readonly main: Route | undefined;
}

export interface ForwarderOptions extends ForwardSettings {
  routes: ListenerRoutes;
  /** Whether new requests are shed now: near the memory limit. */
  load: LoadShedding;
}

/** The proxy listener's request handler; `expectContinue` is true for the `checkContinue` event. */
export type Forward = (req: IncomingMessage, res: ServerResponse, expectContinue?: boolean) => void;

/** One answer for every shed request: its message never changes. */
const OVERLOADED = new OverloadedError('the proxy is near its memory limit and takes no new request for now; retry after a second');

/**
 * Creates a listener's request handler. A new request is shed while memory is near its limit
 * (`503 overloaded`); any other is read once (caller-request.ts) and given its route: the mount
 * its target lies under (the mount removed from the target), or the listener's route of the
 * paths no mount takes. Then it meets the refusals in order, and the choice of its authorizer on
 * its route, which may refuse it too; a refused one is answered with a problem. Any other is
 * forwarded by an {@link Exchange} (exchange.ts): sent with a token, sent again once after a
 * gateway 401 or a pooled connection that broke under it, its answer streamed back.
 */
export function createForwarder(options: ForwarderOptions): Forward {
  const { routes, recorder, load } = options;
  const settings: ForwardSettings = options;
  const { mounts, main } = routes;
  const outside = noRoute(mounts);
  return function forward(req, res, expectContinue = false) {
    const request = readCallerRequest(req, res, performance.now(), expectContinue);
    if (load.shedding) {
      // An upload is not read: answerProblem closes its connection after the answer.
      recorder.shed();
      recorder.answered(req, answerProblem(request, OVERLOADED), request.started);
      return;
    }
    const route = mounts.length === 0 ? main : mountedRoute(request, mounts, main);
    if (route === undefined) {
      recorder.answered(req, answerProblem(request, outside), request.started);
      return;
    }
    const authorizer =
      refuse(request, route) ??
      (route.passthrough === undefined ? route.authorizer : passthroughOr(route.passthrough, request.authorization, route.authorizer));
    if (authorizer instanceof ProxyError) route.recorder.answered(req, answerProblem(request, authorizer), request.started);
    else new Exchange(settings, route, request, authorizer).start();
  };
}

/**
 * The route of the mount `request`'s target lies under, at a segment boundary (`/eu` takes
 * `/eu`, `/eu/...` and `/eu?...`, never `/eux`), with the mount taken off its target; or `main`.
 */
function mountedRoute(request: CallerRequest, mounts: readonly Mount[], main: Route | undefined): Route | undefined {
  const url = request.target;
  for (let i = 0; i < mounts.length; i++) {
    const { prefix, route } = mounts[i]!;
    if (!url.startsWith(prefix)) continue;
    const next = url.charCodeAt(prefix.length);
    if (next !== 47 /* / */ && next !== 63 /* ? */ && url.length !== prefix.length) continue;
    request.mount = prefix;
    request.target = next === 47 ? url.slice(prefix.length) : `/${url.slice(prefix.length)}`;
    return route;
  }
  return main;
}

/** What a request no route takes is told: the mounts that are forwarded. */
function noRoute(mounts: readonly Mount[]): NotProxiedError {
  const named = mounts.map((m) => `${m.prefix}/`);
  const list = named.length <= 1 ? (named[0] ?? 'no path') : `${named.slice(0, -1).join(', ')} and ${named.at(-1)!}`;
  return new NotProxiedError(`only paths under ${list} are forwarded on this listener`);
}

/** One named check a request must pass before it is forwarded on its route: the error to answer, or undefined. */
type Refusal = (request: CallerRequest, route: Route) => ProxyError | undefined;

/**
 * `TRACE` would echo the request, the proxy's `Authorization` included, back to the caller.
 * (`CONNECT` never reaches the forwarder: Node hands it to the listener's `connect` event, which
 * refuses it in server.ts.)
 */
const refuseTrace: Refusal = ({ req }) => (req.method === 'TRACE' ? new MethodNotAllowedError('TRACE is not forwarded') : undefined);

/** Protocol upgrades (WebSocket and the like) are not forwarded; the connection closes after the answer. */
const refuseUpgrade: Refusal = (request) => {
  if (request.upgrade === undefined) return undefined;
  request.res.shouldKeepAlive = false;
  return new UpgradeNotSupportedError(`protocol upgrades (${request.upgrade}) are not forwarded`);
};

/** Only origin-form targets under the route's paths, none a server could read as another path (path-guard.ts). */
const guardTarget: Refusal = (request, route) => checkTarget(request.target, route.paths);

/** The refusals, in the order they are tried. */
const REFUSALS: readonly Refusal[] = [refuseTrace, refuseUpgrade, guardTarget];

/** The first refusal that applies to a request, or undefined. */
function refuse(request: CallerRequest, route: Route): ProxyError | undefined {
  for (let i = 0; i < REFUSALS.length; i++) {
    const refusal = REFUSALS[i]!(request, route);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}
