import { describe, expect, it } from 'vitest';
import { expectSeedHolds } from './chaos-seed.js';

describe('a whole run under a seeded mix of faults, publishing to a faulty bucket', () => {
  it('seed 2: every invariant holds', { timeout: 120_000 }, async () => {
    const result = await expectSeedHolds(2);
    expect(result.lives.some((l) => l.bucket)).toBe(true);
  });
});
