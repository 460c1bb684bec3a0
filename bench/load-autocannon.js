// One load run with autocannon, in its own process so that it shares nothing with the
// orchestrator. Prints { requests, rps, p50Ms, p99Ms, errors } as JSON.
//   node bench/load-autocannon.js '{"url":…,"seconds":5,"connections":50,"method":"GET","bodyBytes":0}'
// With "socketPath", every connection goes to that Unix socket; the URL gives the path and Host.
import autocannon from 'autocannon';

const { url, socketPath, seconds, connections, method, bodyBytes, basic } = JSON.parse(process.argv[2]);
const authorization = basic ? { authorization: `Basic ${Buffer.from(basic).toString('base64')}` } : {};
const result = await autocannon({
  url,
  ...(socketPath ? { socketPath } : {}),
  duration: seconds,
  connections,
  method,
  body: bodyBytes ? Buffer.alloc(bodyBytes, 'x') : undefined,
  headers: { ...(bodyBytes ? { 'content-type': 'application/octet-stream' } : {}), ...authorization },
});
const completed = result.requests.total;
process.stdout.write(
  JSON.stringify({
    requests: completed,
    rps: completed / seconds,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  }),
);
