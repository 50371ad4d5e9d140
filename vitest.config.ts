import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/helpers/no-leaks.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // CLI tests spawn the built CLI; a fork per file keeps servers and signals apart.
    pool: 'forks',
    isolate: false,
    // Most files wait on a simulator, a CLI child or a deadline part of the time: three at once keep a 2-core
    // machine busy (two left it idle a sixth of the time; vitest's default there is one).
    maxWorkers: 3,
  },
});
