// The cost of one DPoP proof (RFC 9449) as the proxy makes it per forwarded request: claims,
// base64url, one signature; the header encoded once per key and the token's ath kept. Prints
// microseconds of wall time and of CPU per proof for each key type the proxy supports.
// Run: npm run build --silent && node bench/dpop-proof.js
import { performance } from 'node:perf_hooks';
import { gatewayHtu } from '../dist/token/dpop/htu.js';
import { generateDpopKey } from '../dist/token/dpop/dpop-key.js';
import { createDpopProver } from '../dist/token/dpop/proof.js';

const clock = { now: () => Date.now(), setTimeout: () => undefined, clearTimeout: () => undefined };
const htuOf = gatewayHtu('https://gw.example.com:8443/gw');
const token = 'eyJhbGciOiJFUzI1NiJ9.'.padEnd(900, 'x');
const budgetMs = Number(process.env.DPOP_BENCH_MS ?? 1500);

function measure(alg) {
  const prover = createDpopProver({ key: generateDpopKey(alg), clock });
  const once = () => prover.proof('GET', htuOf('/api/v1/tickets/123?expand=comments'), { token, nonce: 'eyJ7S_zG.eyJH0-Z.HX4w-7v' });
  for (let i = 0; i < 500; i++) once(); // warm-up: JIT, the cached ath
  let n = 0;
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  const end = performance.now() + budgetMs;
  while (performance.now() < end) {
    for (let i = 0; i < 100; i++) once();
    n += 100;
  }
  const wallUs = Number(process.hrtime.bigint() - start) / 1e3 / n;
  const used = process.cpuUsage(cpu);
  return {
    alg,
    proofs: n,
    wallUsPerProof: wallUs.toFixed(1),
    cpuUsPerProof: ((used.user + used.system) / n).toFixed(1),
    length: once().length,
  };
}

console.log(`node ${process.version}, ${budgetMs} ms per algorithm`);
console.table(['ES256', 'ES384', 'EdDSA', 'PS256', 'RS256'].map(measure));
