import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests start real processes and bind real sockets; two workers fit a 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});
