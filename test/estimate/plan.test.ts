import { describe, expect, it } from 'vitest';
import { planDays } from '../../src/estimate/plan.js';

const items = (...credits: (number | undefined)[]) => credits.map((c) => ({ credits: c, priority: 0 }));

describe('the day-by-day plan', () => {
  it('fills each key day to its cap: an item that does not fit waits while smaller ones after it go', () => {
    const plan = planDays(items(8, 8, 8, 2, 2, 8), [{ key: 'k1', cap: 20, submissionsPerDay: 14_400 }]);
    expect(plan.days).toEqual([
      { day: 1, keys: [{ key: 'k1', items: 4, credits: 20 }] },
      { day: 2, keys: [{ key: 'k1', items: 2, credits: 16 }] },
    ]);
    expect(plan.endsOnDay).toBe(2);
    expect(plan.notPlaced).toBe(0);
  });

  it('spreads a day over several keys, counts what a key already spent today, and says what it cannot place', () => {
    const plan = planDays(items(8, 8, 8, 8, 8, 30, undefined), [
      { key: 'a', cap: 20, submissionsPerDay: 100, usedToday: 12 },
      { key: 'b', cap: 20, submissionsPerDay: 100 },
    ]);
    // Day 1: a has 8 left, b 20 (16 of it used); day 2 takes the rest. 30 is over every cap; one has no price.
    expect(plan.days[0]).toEqual({
      day: 1,
      keys: [
        { key: 'a', items: 1, credits: 8 },
        { key: 'b', items: 2, credits: 16 },
      ],
    });
    expect(plan.days[1]!.keys.reduce((n, k) => n + k.items, 0)).toBe(2);
    expect(plan.endsOnDay).toBe(2);
    expect(plan.notPlaced).toBe(2);
  });

  it('a key day ends at its rate too, and higher priorities go first', () => {
    const plan = planDays(
      [
        { credits: 2, priority: 0 },
        { credits: 4, priority: 5 },
        { credits: 6, priority: 0 },
      ],
      [{ key: 'k', cap: 1_000, submissionsPerDay: 1 }],
    );
    expect(plan.days.map((d) => d.keys[0]!.credits)).toEqual([4, 2, 6]);
  });
});
