import { describe, expect, it } from 'vitest';
import { planDays, type PlanKey } from '../../src/estimate/plan.js';

const images = (...credits: (number | undefined)[]) =>
  credits.map((c) => ({ type: 'image' as const, credits: c, priority: 0 }));
const key = (over: Partial<PlanKey> = {}): PlanKey => ({
  key: 'k1',
  cap: 20,
  submitEveryMs: 6_000,
  slots: { image: 10, video: 5 },
  ...over,
});

describe('the day-by-day plan', () => {
  it('fills each key day to its cap: an item that does not fit waits while smaller ones after it go', () => {
    const plan = planDays(images(8, 8, 8, 2, 2, 8), [key()]);
    expect(plan.days).toEqual([
      { day: 1, keys: [{ key: 'k1', items: 4, credits: 20 }] },
      { day: 2, keys: [{ key: 'k1', items: 2, credits: 16 }] },
    ]);
    expect(plan.endsOnDay).toBe(2);
    expect(plan.notPlaced).toBe(0);
  });

  it('spreads a day over several keys, counts what a key already spent today, and says what it cannot place', () => {
    const plan = planDays(images(8, 8, 8, 8, 8, 30, undefined), [key({ key: 'a', usedToday: 12 }), key({ key: 'b' })]);
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

  it('images and videos go as their slots free, in the order they freed: videos are not held back to manifest order', () => {
    const items = [
      ...images(2, 2, 2, 2, 2, 2, 2, 2),
      { type: 'video' as const, credits: 10, priority: 0 },
      { type: 'video' as const, credits: 10, priority: 0 },
    ];
    // One image slot, held 50 s a job; a turn at the window every 6 s. At 0 an image, at 6 and 12 the two videos
    // (the image slot is busy), at 50 the next image: 24 credits, the cap; the other six images the next day.
    const plan = planDays(items, [key({ cap: 24, slots: { image: 1, video: 5 } })]);
    expect(plan.days.map((d) => d.keys[0]!.items)).toEqual([4, 6]);
    expect(plan.days[0]!.keys[0]!.credits).toBe(24);
  });

  it('a day ends at the rate too, and higher priorities go first', () => {
    const plan = planDays(
      [
        { type: 'image', credits: 2, priority: 0 },
        { type: 'image', credits: 4, priority: 5 },
        { type: 'image', credits: 6, priority: 0 },
      ],
      // One submission a day: the priority 5 item first, then the others in manifest order.
      [key({ cap: 1_000, submitEveryMs: 86_400_000 })],
    );
    expect(plan.days.map((d) => d.keys[0]!.credits)).toEqual([4, 2, 6]);
    const slow = planDays(images(2, 2, 2, 2), [key({ cap: 1_000, submitEveryMs: 40_000_000 })]);
    expect(slow.days.map((d) => d.keys[0]!.items)).toEqual([3, 1]);
  });
});
