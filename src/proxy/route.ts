import type { GatewayConnections } from '../net/dispatchers.js';
import type { DpopGateway } from '../token/dpop/htu.js';
import type { ProxyError } from '../core/errors.js';
import type { Authorizer, PassthroughAuthorizers } from './authorizer.js';
import type { ForwardedPaths } from './path-guard.js';
import type { Recorder } from './recorder.js';
import type { SeenHeaderNames } from './response-headers.js';

/**
 * A route: one gateway behind the proxy, with everything a request to it needs. The forwarder
 * chooses a route for each request, and everything downstream of that choice reads the route,
 * never a process-wide gateway value: a second gateway is a second route, not a second copy of
 * the code. The wiring builds the routes from the settings (app/routes.ts).
 */
export interface Route {
  /** The route's name: `default` for the settings without routes. */
  readonly name: string;
  /** The gateway path prefixes it forwards (`/api/v1`); anything else is `404 not_proxied`. */
  readonly paths: ForwardedPaths;
  /** `BASE_URL` without its trailing slash, path prefix included. */
  readonly baseUrl: string;
  /** The path prefix of `BASE_URL` (`/gw`), or `''`: it goes before every forwarded target. */
  readonly basePath: string;
  /** The connections to the gateway, read at each send (rebuilt when TLS material changes). */
  readonly connections: GatewayConnections;
  /** The gateway as DPoP proofs name it: the `htu` of a target, and whose nonces are kept. */
  readonly dpop: DpopGateway;
  /**
   * The authorizer of a request that brings no credentials of its own: the configured
   * credential's held token, or `credentials_required` when none is configured.
   */
  readonly authorizer: Authorizer | ProxyError;
  /** With `PASSTHROUGH_BASIC`: the authorizers of callers' own Basic credentials. */
  readonly passthrough: PassthroughAuthorizers | undefined;
  /** `UPSTREAM_TIMEOUT_MS`: until the gateway's answer head. */
  readonly upstreamTimeoutMs: number;
  /** `UPSTREAM_IDLE_TIMEOUT_MS`: the longest silence inside a request or response body, either way. */
  readonly upstreamIdleTimeoutMs: number;
  /** `REPLAY_BODY_LIMIT_BYTES`: bodies up to this size are sent again after a 401 or a broken connection. */
  readonly replayBodyLimitBytes: number;
  /** The gateway's header names as last seen (response-headers.ts), for its answers. */
  readonly seenNames: SeenHeaderNames;
  /** Where its requests are recorded: its metrics, its access log lines and warnings carry its name. */
  readonly recorder: Recorder;
}
