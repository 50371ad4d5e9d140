import { describe, expect, it } from 'vitest';
import { estimateEta, type EtaInput } from '../../src/estimate/index.js';
import { DEFAULT_KEY_LIMITS } from '../../src/scheduler/limits.js';

const T0 = Date.UTC(2026, 10, 22, 9, 0, 0);
const base = (over: Partial<EtaInput> = {}): EtaInput => ({
  now: T0 + 600_000,
  run: { startedAt: T0, limits: DEFAULT_KEY_LIMITS, timeScale: 1 },
  open: { images: 100, videos: 0 },
  finished: { n: 0, first: null, last: null },
  credits: { toSpend: 0, chargedToday: 0 },
  ...over,
});

describe('the ETA of a run under way', () => {
  it('before a few items finish, comes from the limits: 100 images at 10 per minute take about 10 minutes', () => {
    const eta = estimateEta(base());
    expect(eta.basis).toBe('limits');
    // 100 submissions at 10/min = 600 s, plus one typical image (50 s) to finish the last.
    expect(eta.seconds).toBe(650);
    expect(eta.at).toBe(T0 + 600_000 + 650_000);
  });

  it("once a few items finished, follows the run's own pace", () => {
    // 21 items finished over 200 s: one every 10 s, so 100 more take 1000 s.
    const eta = estimateEta(base({ finished: { n: 21, first: T0 + 100_000, last: T0 + 300_000 } }));
    expect(eta).toMatchObject({ basis: 'observed', seconds: 1000 });
  });

  it('scales with a time-scaled rehearsal', () => {
    const scaled = estimateEta(
      base({
        run: { startedAt: T0, timeScale: 60, limits: { ...DEFAULT_KEY_LIMITS, submit: { count: 10, windowMs: 1000 } } },
      }),
    );
    expect(scaled.seconds).toBe(Math.round(650 / 60));
  });

  it('adds the rest of a wait for the daily cap', () => {
    const now = T0 + 600_000;
    const eta = estimateEta(
      base({ run: { startedAt: T0, limits: DEFAULT_KEY_LIMITS, timeScale: 1, waitingUntil: now + 3_600_000 } }),
    );
    expect(eta.seconds).toBe(3600 + 650);
  });

  it('is never before the key day in which the last credits can be spent', () => {
    // 30,000 credits still to spend, 15,000 of today's 20,000 spent: 5,000 today, 20,000 tomorrow, 5,000 the day after.
    const eta = estimateEta(base({ credits: { toSpend: 30_000, chargedToday: 15_000 } }));
    const dayAfterTomorrow = Date.UTC(2026, 10, 24);
    expect(eta.at).toBeGreaterThanOrEqual(dayAfterTomorrow);
    expect(eta.at).toBeLessThan(dayAfterTomorrow + 650_000);
    // Within today's cap, the cap changes nothing.
    expect(estimateEta(base({ credits: { toSpend: 4_000, chargedToday: 15_000 } })).seconds).toBe(650);
  });

  it('is zero work when nothing is left but the run has not ended', () => {
    expect(estimateEta(base({ open: { images: 0, videos: 0 } })).seconds).toBe(0);
  });
});
