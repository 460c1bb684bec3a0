import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests start real processes and bind real sockets; two workers fit a 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
    // The last line of a run names the tests skipped for a missing program (test/helpers/tools.ts).
    reporters: ['default', './test/helpers/skip-reporter.ts'],
  },
});
