import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { CredentialsRequiredError, MethodNotAllowedError, OverloadedError, ProxyError, UpgradeNotSupportedError } from '../core/errors.js';
import { parseBasicCredentials } from '../token/basic-credentials.js';
import type { Credential } from '../token/client-auth/index.js';
import { answerProblem } from './answer-problem.js';
import { Exchange } from './exchange.js';
import { type Authorizer, CallerRequest, type ExchangeOptions, exchangeSettings } from './exchange-options.js';
import type { LoadShedding } from '../overload/overload-guard.js';
import { checkTarget } from './path-guard.js';

/** Which token source serves a request, or the error to answer it with. */
export type SelectSource = (req: IncomingMessage) => Authorizer | ProxyError;

export interface ForwarderOptions extends ExchangeOptions {
  selectSource: SelectSource;
  /** Whether new requests are shed now: near the memory limit. */
  load: LoadShedding;
}

/** The proxy listener's request handler; `expectContinue` is true for the `checkContinue` event. */
export type Forward = (req: IncomingMessage, res: ServerResponse, expectContinue?: boolean) => void;

/** One answer for every shed request: its message never changes. */
const OVERLOADED = new OverloadedError('the proxy is near its memory limit and takes no new request for now; retry after a second');

/**
 * Creates the proxy listener's request handler. A new request is shed while memory is near its
 * limit (`503 overloaded`); any other meets the refusals in order, then the choice of its token
 * source, which may refuse it too; a refused one is answered with a problem. Any other is
 * forwarded by an {@link Exchange} (exchange.ts): sent with a token, sent again once after a
 * gateway 401 or a pooled connection that broke under it, its answer streamed back.
 */
export function createForwarder(options: ForwarderOptions): Forward {
  const settings = exchangeSettings(options);
  const { selectSource, recorder, load } = options;
  return function forward(req, res, expectContinue = false) {
    const request = new CallerRequest(req, res, performance.now(), expectContinue);
    if (load.shedding) {
      // An upload is not read: answerProblem closes its connection after the answer.
      recorder.shed();
      return answerProblem(recorder, req, res, OVERLOADED, request.started, request.hasBody);
    }
    const source = refuse(request) ?? selectSource(req);
    if (source instanceof ProxyError) answerProblem(recorder, req, res, source, request.started, request.hasBody);
    else new Exchange(settings, request, source).start();
  };
}

/** One named check a request must pass before it is forwarded: the error to answer, or undefined. */
type Refusal = (request: CallerRequest) => ProxyError | undefined;

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

/** Only origin-form targets under `/api/v1/`, none a server could read as another path (path-guard.ts). */
const guardTarget: Refusal = ({ req }) => checkTarget(req.url!);

/** The refusals, in the order they are tried. */
const REFUSALS: readonly Refusal[] = [refuseTrace, refuseUpgrade, guardTarget];

/** The first refusal that applies to a request, or undefined. */
function refuse(request: CallerRequest): ProxyError | undefined {
  for (let i = 0; i < REFUSALS.length; i++) {
    const refusal = REFUSALS[i]!(request);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}

/** The pass-through token sources, one per caller's own Basic credentials. */
export interface PassthroughSources {
  /** The source for these credentials, or the error to answer with (`invalid_client`). */
  sourceFor(credential: Credential): Authorizer | ProxyError;
}

/**
 * Chooses the token source of each request:
 * - with pass-through on (`PASSTHROUGH_BASIC`), a request carrying Basic credentials is served by
 *   their own source from the cache; malformed ones, or ones the token endpoint rejected, are
 *   answered `invalid_client`;
 * - any other request is served by the configured credential, or answered
 *   `credentials_required` when none is configured.
 *
 * Built once; the function it returns allocates nothing for a request served by the configured
 * credential.
 */
export function createSourceSelector(configured: Authorizer | undefined, passthrough: PassthroughSources | undefined): SelectSource {
  const fallback: Authorizer | ProxyError =
    configured ?? new CredentialsRequiredError('no credentials are configured; send Basic credentials');
  if (passthrough === undefined) return () => fallback;
  return (req) => {
    const basic = parseBasicCredentials(req.headers.authorization);
    if (basic instanceof ProxyError) return basic;
    if (basic !== undefined) return passthrough.sourceFor(basic);
    return fallback;
  };
}
