import { describe, expect, it } from 'vitest';
import { meEnvelope } from '../../src/api/schemas.js';

// The spec shows credits, subscriptionCredits and scopes; the daily cap, today's usage and the reset are "not shown".
describe("/me's unshown limit fields", () => {
  it("reads the daily cap, today's usage and the reset time under the names a service may reasonably use", () => {
    const reset = Date.UTC(2026, 10, 24);
    const variants = [
      {
        credits: 1,
        scopes: [],
        limits: { dailyCredits: 20000, dailyCreditsUsed: 8, dailyResetAt: new Date(reset).toISOString() },
      },
      { me: { credits: 1, scopes: [], dailyCap: 20000, usedToday: 8, resetAt: reset / 1000 } },
      { data: { credits: 1, scopes: [], key: { limits: { dailyCap: { limit: 20000, used: 8, resetAt: reset } } } } },
    ];
    for (const body of variants)
      expect(meEnvelope.parse(body)).toMatchObject({ dailyCap: 20000, usedToday: 8, resetAt: reset });
  });

  it('leaves out what it does not recognise, rather than guessing', () => {
    const me = meEnvelope.parse({ credits: 5, scopes: ['image'], limits: { somethingElse: 3, resetAt: 'not a date' } });
    expect(me.usedToday).toBeUndefined();
    expect(me.resetAt).toBeUndefined();
    expect(me.dailyCap).toBeUndefined();
  });
});
