// Prints where a CPU profile (node --cpu-prof) spends its time: self time per function, and the
// total (inclusive) time of the product's own functions.
//   node bench/profile-top.js <file.cpuprofile> [rows]
import { readFileSync } from 'node:fs';

const [, , file, rowsArg] = process.argv;
const rows = Number(rowsArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfSamples = new Map();
for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const label = ({ callFrame: f }) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|src)\//, '$1/')}:${f.lineNumber + 1}`;
const self = new Map();
const total = new Map();
const totalSamples = profile.samples.length;
for (const [id, count] of selfSamples) {
  const node = byId.get(id);
  self.set(label(node), (self.get(label(node)) ?? 0) + count);
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const name = label(byId.get(at));
    if (seen.has(name)) continue;
    seen.add(name);
    total.set(name, (total.get(name) ?? 0) + count);
  }
}
const idle = [...self].filter(([name]) => name.startsWith('(idle)')).reduce((a, [, n]) => a + n, 0);
const busy = totalSamples - idle;
const pct = (n) => `${((100 * n) / busy).toFixed(1).padStart(5)} %`;
console.log(`${busy} busy samples of ${totalSamples}\n\nself time (of busy):`);
for (const [name, n] of [...self]
  .filter(([k]) => !k.startsWith('(idle)'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, rows))
  console.log(`${pct(n)}  ${name}`);
console.log("\ninclusive time of the product's own functions:");
for (const [name, n] of [...total]
  .filter(([k]) => / dist\//.test(k))
  .sort((a, b) => b[1] - a[1])
  .slice(0, rows))
  console.log(`${pct(n)}  ${name}`);
