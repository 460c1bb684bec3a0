/**
 * Ends a run with one plain line naming the tests skipped for a missing program and how to
 * install it (see test/helpers/tools.ts); prints nothing when nothing was skipped.
 */
import type { Reporter } from 'vitest/node';
import { skipSummary } from './tools.js';

export default class SkipReporter implements Reporter {
  onTestRunEnd(): void {
    const line = skipSummary();
    if (line !== undefined) process.stdout.write(`\n${line}\n`);
  }
}
