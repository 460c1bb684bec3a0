/**
 * `node bench/histogram.js` (after `npm run build`): the request-duration histogram's cost per
 * observation, prom-client's bound child beside the proxy's bound histogram, in the same run
 * (src/telemetry/bound-histogram.ts says why the proxy keeps its own).
 */
import { Histogram, Registry } from 'prom-client';
import { BoundHistogram } from '../dist/telemetry/bound-histogram.js';
import { observeDuration } from '../dist/telemetry/request-metrics.js';

const BOUNDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
const registry = new Registry();
const child = new Histogram({ name: 'bound_child', help: 'x', labelNames: ['method'], buckets: BOUNDS, registers: [registry] }).labels(
  'GET',
);
const ours = new BoundHistogram({ name: 'bound', help: 'x', labelNames: ['route', 'method'], bounds: BOUNDS, registry });
const series = ours.child({ route: 'default', method: 'GET' });
const N = 2e6;
const values = Array.from({ length: 1024 }, () => Math.random() * 0.3);

function nsPerObservation(observe) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < N; i++) observe(values[i & 1023]);
  return Number(process.hrtime.bigint() - started) / N;
}

for (let round = 1; round <= 5; round++) {
  const bound = nsPerObservation((v) => child.observe(v));
  const one = nsPerObservation((v) => observeDuration(series, v));
  console.log(`round ${round}: bound child ${bound.toFixed(0)} ns, bound ${one.toFixed(0)} ns per observation`);
}
