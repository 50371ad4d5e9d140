import { afterAll, expect } from 'vitest';

const LEAKS = ['TCPServerWrap', 'ProcessWrap'];

/**
 * After each test file: no listening server and no child process is left
 * behind. Closed handles are released a tick or two later, so allow a moment.
 */
afterAll(async () => {
  let left: string[] = [];
  for (let i = 0; i < 50; i++) {
    left = process.getActiveResourcesInfo().filter((r) => LEAKS.includes(r));
    if (left.length === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(left, 'servers or child processes were left running').toEqual([]);
});
