import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/helpers/no-leaks.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // CLI tests spawn the built CLI; a fork per file keeps servers and signals apart.
    pool: 'forks',
    // Most files wait on a simulator or a CLI child, not the CPU: two at once on a 2-core machine (vitest's default there is one).
    maxWorkers: 2,
  },
});
