// Splits a CPU profile's busy samples into the steps of a proxied request, and turns the shares
// into microseconds with the CPU per request the bench measured for the same candidate:
//   node bench/profile-budget.js <file.cpuprofile> <CPU µs per request>
// A sample goes to the innermost frame on its stack that names a step (below), so the write a
// response's end triggers counts as "answer end", the metrics it records as "metrics". Names are
// function names, which the product's bundle keeps; the steps match the minimal proxy's too.
// With tracing on, a sample under a batch's export goes to the export whatever the innermost
// frame (its HTTP request has the gateway dispatch's frames), and the spans' work on the request
// path to its own step.
import { readFileSync } from 'node:fs';

/** Steps a sample belongs to when any frame on its stack names them, before the innermost rule. */
const OWNERS = [['tracing: export (encode, send)', ['sendBatch', 'encodeExport', 'postExport']]];

const STEPS = [
  ['caller request parse', ['parserOnHeadersComplete', 'parserOnIncoming', 'parserOnBody', 'parserOnMessageComplete']],
  ['request headers read', ['readRequestHeaders', 'get headers']],
  ['guard', ['admit', 'guardTarget', 'checkTarget']],
  ['token', ['current', 'authorizationFor', 'get token']],
  ['dispatch to gateway', ['dispatch', 'send', 'start', 'stream', 'Request', '_resume', 'writeH1', 'resumeH1']],
  ['gateway answer parse', ['execute', 'readMore', 'onHttpSocketReadable']],
  ['response head', ['onResponseStart', 'onHeadersComplete']],
  ['body copy', ['onResponseData', 'onBody', 'onData']],
  ['answer end (write to caller)', ['onResponseEnd', 'onMessageComplete', 'onComplete']],
  ['metrics', ['answered', 'requestEnded', 'observe']],
  ['log', ['info', 'write', 'asJson']],
  ['tracing: spans on the request path', ['began', 'attempt', 'attemptEnded', 'ended', 'awaitingToken']],
];
const LEAF = new Map([
  ['(garbage collector)', 'garbage collector'],
  ['(program)', '(program): V8 and native, unattributed'],
]);

const [, , file, usArg] = process.argv;
const usPerRequest = Number(usArg);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const stepOf = new Map();
for (const [step, names] of STEPS) for (const name of names) stepOf.set(name, step);
const ownerOf = new Map();
for (const [step, names] of OWNERS) for (const name of names) ownerOf.set(name, step);
// The access log's `write`/`info` only count under a logger: pino's frames come from its module.
const isLog = (f) => /pino|sonic-boom/.test(f.url);

const counts = new Map();
let busy = 0;
for (const id of profile.samples) {
  const leaf = byId.get(id).callFrame.functionName;
  if (leaf === '(idle)') continue;
  busy += 1;
  let step = LEAF.get(leaf);
  for (let at = id; step === undefined && at !== undefined; at = parent.get(at)) step = ownerOf.get(byId.get(at).callFrame.functionName);
  for (let at = id; step === undefined && at !== undefined; at = parent.get(at)) {
    const f = byId.get(at).callFrame;
    const s = stepOf.get(f.functionName);
    if (s === 'log' && !isLog(f)) continue;
    step = s;
  }
  step ??= 'other (event loop, timers, sockets)';
  counts.set(step, (counts.get(step) ?? 0) + 1);
}
const order = [...STEPS.map(([s]) => s), ...OWNERS.map(([s]) => s), ...LEAF.values(), 'other (event loop, timers, sockets)'];
console.log(`${busy} busy samples; ${usPerRequest} µs of CPU per request`);
for (const step of order) {
  const n = counts.get(step) ?? 0;
  console.log(
    `${step.padEnd(42)} ${((100 * n) / busy).toFixed(1).padStart(5)} %  ${((usPerRequest * n) / busy).toFixed(1).padStart(5)} µs`,
  );
}
