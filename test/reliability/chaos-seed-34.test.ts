import { describe, expect, it } from 'vitest';
import { expectSeedHolds } from './chaos-seed.js';

describe('a whole run under a seeded mix of faults, publishing to a faulty bucket', () => {
  it('seed 34: every invariant holds, every life publishing through three kinds of bucket fault', {
    timeout: 120_000,
  }, async () => {
    const result = await expectSeedHolds(34);
    expect(result.lives.every((l) => l.bucket)).toBe(true);
    expect(Object.keys(result.faults).filter((k) => k.startsWith('bucket')).length).toBeGreaterThanOrEqual(3);
  });
});
