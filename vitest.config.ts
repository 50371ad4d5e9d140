import { defineConfig } from 'vitest/config';
import { LongFilesFirst } from './test/helpers/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/helpers/no-leaks.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // CLI tests spawn the built CLI; a fork per file keeps servers and signals apart.
    pool: 'forks',
    isolate: false,
    // Most files wait on a simulator, a CLI child or a deadline part of the time: on a 2-core machine two left it
    // idle a sixth of the time, three a quarter (vitest's default there is one); four ran the suite in 218-226 s, not
    // 265 s, with the cores 85% busy.
    maxWorkers: 4,
    sequence: { sequencer: LongFilesFirst },
  },
});
