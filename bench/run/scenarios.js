// The scenarios of `npm run bench`, one entry each: the request the load generator repeats, the
// candidates the product is set against, and what else the scenario needs of the run. Adding a
// scenario is adding an entry here (and a row to targets.js if it has a target); bench/README.md
// describes each one.
//
//   method, path, connections, bodyBytes   the request, sent by wrk or autocannon
//   against      the candidates run beside the product in the same rounds (candidates.js);
//                `before` only when BENCH_BEFORE or BENCH_BEFORE_ENV names a build
//   tls          the upstream speaks HTTPS (its CA made for the run), its TLS handshakes counted
//   basic        `user:password` sent as Basic in every request; the product's builds run with
//                PASSTHROUGH_BASIC=true (docs/configuration.md, "Several workspaces behind one proxy")
//   dpop         the proof algorithm: the product runs with DPOP=on and that key
//                (docs/networks-and-authentication.md, "DPoP: tokens bound to the proxy's key"),
//                and the upstream counts the proofs it receives
//   socket       the product listens on a Unix socket (LISTEN_SOCKET); every candidate of the
//                scenario is loaded by autocannon, which can connect to one (wrk cannot)
//   tracing      the product exports a span of every request to a collector on loopback
//                (collector.js), with OTEL_TRACES_SAMPLER=always_on (docs/operations.md, "Traces")
//   routes       the product reads that many routes from its configuration file, each mounted on
//                the main listener, and is loaded through the last mount (docs/routes.md)
//   drainS       seconds waited after each round's load before its CPU is read, so that work the
//                round left behind (the export of its last spans) is counted in it
//   optional     not run unless BENCH_SCENARIOS names it
import { BEARER, BEFORE, HTTP_PROXY, MINIMAL, ONE_ROUTE, TCP, UNTRACED } from './candidates.js';

const TICKETS = '/api/v1/tickets'; // about 1 KB of JSON
const BLOB = '/api/v1/blob'; // 1 MB
const BUILD_AND_BASELINES = [BEFORE, MINIMAL, HTTP_PROXY];

export const SCENARIOS = {
  'get-1k': { method: 'GET', path: TICKETS, connections: 50, bodyBytes: 0, against: BUILD_AND_BASELINES },
  'post-64k': { method: 'POST', path: TICKETS, connections: 50, bodyBytes: 64 * 1024, against: BUILD_AND_BASELINES },
  'get-1m': { method: 'GET', path: BLOB, connections: 50, bodyBytes: 0, against: BUILD_AND_BASELINES },
  'post-1m': { method: 'POST', path: TICKETS, connections: 50, bodyBytes: 1024 * 1024, against: BUILD_AND_BASELINES },
  // http-proxy sits this one out: its baseline has no CA to trust.
  'https-get-1k': { method: 'GET', path: TICKETS, connections: 50, bodyBytes: 0, tls: true, against: [BEFORE, MINIMAL] },
  // Each request finds its token source by HMAC of the credentials it carries.
  'get-1k-passthrough': {
    method: 'GET',
    path: TICKETS,
    connections: 50,
    bodyBytes: 0,
    basic: 'bench-client:bench-secret',
    against: BUILD_AND_BASELINES,
    optional: true,
  },
  // A proof signed per request; the product is held against itself with DPoP off, not the baselines.
  'get-1k-dpop': { method: 'GET', path: TICKETS, connections: 50, bodyBytes: 0, dpop: 'ES256', against: [BEARER] },
  'get-1k-dpop-eddsa': { method: 'GET', path: TICKETS, connections: 50, bodyBytes: 0, dpop: 'EdDSA', against: [BEARER] },
  // The GET of get-1k over a Unix socket, held against the same build on loopback TCP.
  'get-1k-socket': { method: 'GET', path: TICKETS, connections: 50, bodyBytes: 0, socket: true, against: [TCP] },
  // Every request traced (two spans) and exported, held against the same build with tracing off;
  // a round's spans are exported within a second of its end, and counted in it.
  // The GET of get-1k through the last of 32 mounted routes, held against the same build with one route.
  'get-1k-routes': { method: 'GET', path: TICKETS, connections: 50, bodyBytes: 0, routes: 32, against: [ONE_ROUTE], optional: true },
  'get-1k-tracing': { method: 'GET', path: TICKETS, connections: 50, bodyBytes: 0, tracing: true, drainS: 1.5, against: [UNTRACED] },
};

/** The scenarios run when BENCH_SCENARIOS says nothing. */
export function defaultScenarioNames() {
  return Object.keys(SCENARIOS).filter((name) => !SCENARIOS[name].optional);
}
