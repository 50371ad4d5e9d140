import { describe, it } from 'vitest';
import { expectSeedHolds } from './chaos-seed.js';

/**
 * A few seeds of the chaos bench (npm run bench chaos runs a thousand):
 * between them, outages that refuse and reset (one past --unreachable-minutes),
 * answers lost after the charge, 5xx and 503s, 429 storms, cut downloads,
 * expired links, failed jobs, SIGKILL and SIGTERM at random instants; seeds 2
 * and 34 (files of their own) publish to a bucket that slows down, refuses,
 * goes silent, resets and tears answers, with web copies and checks, killed
 * during publication. Each run is then run again with the same command until
 * it ends, and the ledger, the output dir and the bucket are checked: nothing
 * paid twice, nothing paid lost, never over a limit, every output and copy
 * verified where it belongs once, no partial or staged file left, no stack
 * trace, never a hang.
 */
describe('whole runs under a seeded mix of faults', () => {
  it.each([4, 10, 13, 16])('seed %i: every invariant holds', { timeout: 120_000 }, async (seed) => {
    await expectSeedHolds(seed);
  });
});
