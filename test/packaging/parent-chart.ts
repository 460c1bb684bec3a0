/**
 * examples/parent-chart, ready to render: copied beside a copy of the chart as in the repository,
 * so its `file://../../helm/ticket-auth-proxy` dependency resolves, and the dependency vendored
 * the way a user vendors it (`helm dependency build`; a file:// repository needs no network).
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { helm } from './helm-binary.js';

const root = join(import.meta.dirname, '..', '..');

/** Builds the example's dependency in a copy under `work`; returns the copy's directory. */
export async function buildParentChart(work: string): Promise<string> {
  cpSync(join(root, 'examples', 'parent-chart'), join(work, 'examples', 'parent-chart'), { recursive: true });
  cpSync(join(root, 'helm', 'ticket-auth-proxy'), join(work, 'helm', 'ticket-auth-proxy'), { recursive: true });
  const parent = join(work, 'examples', 'parent-chart');
  const built = await helm(['dependency', 'build', parent]);
  if (built.code !== 0) throw new Error(`helm dependency build failed:\n${built.stderr}`);
  return parent;
}
