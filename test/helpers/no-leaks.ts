import { afterAll, afterEach, expect } from 'vitest';
import { recordWarning, takeWarnings } from './warnings.js';

const LEAKS = ['TCPServerWrap', 'ProcessWrap'];

// Once per process: test files share their worker's process (vitest's isolate: false), and a listener added per file
// would itself pass Node's limit of ten and print a warning.
const listening = globalThis as { __genbatchHearsWarnings?: boolean };
if (!listening.__genbatchHearsWarnings) {
  listening.__genbatchHearsWarnings = true;
  process.on('warning', (warning) => recordWarning(`${warning.name}: ${warning.message}`));
}

/** No test may print a Node warning, in this process or in a CLI it started. */
afterEach(async () => {
  await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
  expect(takeWarnings(), 'Node printed warnings').toEqual([]);
});

/**
 * After each test file: no listening server and no child process is left
 * behind. Closed handles are released a tick or two later, so allow a moment.
 */
afterAll(async () => {
  await new Promise((r) => setImmediate(r));
  expect(takeWarnings(), 'Node printed warnings').toEqual([]);
  let left: string[] = [];
  for (let i = 0; i < 50; i++) {
    left = process.getActiveResourcesInfo().filter((r) => LEAKS.includes(r));
    if (left.length === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(left, 'servers or child processes were left running').toEqual([]);
});
