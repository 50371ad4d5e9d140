import { describe, expect, it } from 'vitest';
import { ApiError, TransportError, policy, waitMs } from '../../src/api/index.js';

const apiError = (status: number, code: string, retryAfterMs?: number, details = {}) =>
  new ApiError(status, code, code, details, retryAfterMs, undefined, 'POST', '/images');
const reset = () => new TransportError('ECONNRESET', 'socket hang up', 'POST', '/images');
const at60x = (ms: number) => ms / 60;
/** The key's submission limit, as a lane holds it (real time). */
const submit = { count: 10, windowMs: 1_000 };

describe('a reaction carries its delay and its budget, and the delay is scaled in one place', () => {
  it('Retry-After is taken as the service said it; our own delays are in the service’s time, scaled', () => {
    const unavailable = policy('submit', apiError(503, 'UPSTREAM_UNAVAILABLE'));
    expect(unavailable).toMatchObject({ do: 'resend-later', maxResends: 1 });
    expect(waitMs(unavailable, 0, apiError(503, 'UPSTREAM_UNAVAILABLE'), at60x, submit)).toBe(10_000 / 60);
    expect(waitMs(unavailable, 0, apiError(503, 'UPSTREAM_UNAVAILABLE', 750), at60x, submit)).toBe(750);
    const cap = policy('submit', apiError(429, 'DAILY_CAP_REACHED'));
    expect(waitMs(cap, 0, apiError(429, 'DAILY_CAP_REACHED'), at60x, submit)).toBe(3_600_000 / 60);
    // A rate limit without Retry-After: the limit's own spacing is the wait (one request's share of its window).
    expect(
      waitMs(policy('submit', apiError(429, 'RATE_LIMITED')), 0, apiError(429, 'RATE_LIMITED'), at60x, submit),
    ).toBe(100);
  });

  it('a backoff grows with the resends, within its cap, scaled, whatever Retry-After says', () => {
    const lost = policy('submit', reset());
    expect(lost).toEqual({ do: 'resend-with-backoff', maxResends: 8, baseMs: 500 });
    for (let n = 0; n < 30; n++) {
      const wait = waitMs(lost, n, reset(), at60x, submit);
      const ceiling = Math.min(60_000, 500 * 2 ** n);
      expect(wait).toBeGreaterThanOrEqual(ceiling / 2 / 60);
      expect(wait).toBeLessThanOrEqual(ceiling / 60);
    }
  });

  it('each operation has its own budget: reads a dozen, uploads five, refused reads of one job two', () => {
    expect(policy('read-job', reset())).toMatchObject({ do: 'resend-with-backoff', maxResends: 12 });
    expect(policy('read-job', apiError(404, 'NOT_FOUND'))).toMatchObject({ do: 'keep-job', maxReads: 2 });
    expect(policy('upload', reset())).toMatchObject({ do: 'resend-with-backoff', maxResends: 5, baseMs: 1_000 });
    expect(policy('upload', apiError(409, 'IDEMPOTENCY_KEY_REUSED'))).toMatchObject({ maxResends: 5 });
    expect(policy('submit', apiError(409, 'IDEMPOTENCY_IN_FLIGHT'))).toMatchObject({
      do: 'query-later',
      maxResends: 30,
    });
  });

  it('a job list refused for its page size asks again with the service’s default; its 429 waits', () => {
    expect(policy('list-jobs', apiError(400, 'VALIDATION_ERROR', undefined, { field: 'limit' }))).toEqual({
      do: 'service-default',
    });
    expect(policy('list-jobs', apiError(429, 'RATE_LIMITED', 2_000))).toMatchObject({ do: 'wait-and-resend' });
  });
});
