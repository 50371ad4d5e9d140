import { describe, expect, it } from 'vitest';
import { ApiClient, ApiError, reactionTo, type Reaction } from '../../src/api/index.js';
import type { SimulatorOptions } from '../../src/simulator/index.js';
import { imageBody, newKey, rejection, startTestSim, type TestSim } from '../helpers/sim.js';

interface Case {
  code: string;
  status: number;
  sim?: SimulatorOptions;
  provoke: (t: TestSim) => Promise<unknown>;
  reaction: Reaction['do'];
  /** Jobs the provoking steps legitimately created before the error; the error itself charges nothing. */
  charges?: number;
  check?: (error: ApiError, t: TestSim) => void;
}

const account = (t: TestSim) => t.sim.service.accounts.byLabel('main').account;

/** Every row of the spec's error table, provoked from the simulator and seen through the client. */
const cases: Case[] = [
  {
    code: 'VALIDATION_ERROR',
    status: 400,
    reaction: 'mark-item',
    provoke: (t) => t.client.submitImage({ ...imageBody(), resolution: '8K' }, newKey()),
    check: (e) => {
      expect(e.details.field).toBe('resolution');
      expect(e.details.allowed).toEqual(['1K', '2K', '4K']);
    },
  },
  {
    code: 'UNAUTHENTICATED',
    status: 401,
    reaction: 'stop-run',
    provoke: async (t) => {
      const stranger = new ApiClient({ baseUrl: t.sim.baseUrl, apiKey: 'gbk_not_a_real_key' });
      try {
        return await stranger.me();
      } finally {
        await stranger.close();
      }
    },
  },
  {
    code: 'UNAUTHENTICATED',
    status: 401,
    reaction: 'stop-run',
    provoke: (t) => {
      t.sim.service.accounts.byLabel('main').revoked = true;
      return t.client.me();
    },
  },
  {
    code: 'CREDITS_EXHAUSTED',
    status: 402,
    reaction: 'stop-run',
    sim: { credits: 5 },
    provoke: (t) => t.client.submitImage(imageBody(), newKey()),
    check: (e) => expect(e.details.required).toBe(8),
  },
  {
    code: 'SCOPE_DENIED',
    status: 403,
    reaction: 'stop-run',
    sim: { keys: [{ label: 'main', scopes: ['image'] }] },
    provoke: (t) =>
      t.client.submitVideo(
        {
          prompt: 'spin',
          model: 'motion-extend',
          duration: '5',
          resolution: '720p',
          aspectRatio: '16:9',
          sourceJobId: 'job_x',
        },
        newKey(),
      ),
  },
  {
    code: 'API_NOT_ELIGIBLE',
    status: 403,
    reaction: 'stop-run',
    provoke: (t) => {
      account(t).eligible = false;
      return t.client.me();
    },
  },
  {
    code: 'API_DISABLED',
    status: 403,
    reaction: 'stop-run',
    provoke: (t) => {
      account(t).apiDisabled = true;
      return t.client.listModels('image');
    },
  },
  {
    code: 'ACCOUNT_SUSPENDED',
    status: 403,
    reaction: 'stop-run',
    provoke: (t) => {
      account(t).suspended = true;
      return t.client.me();
    },
  },
  {
    code: 'IDEMPOTENCY_IN_FLIGHT',
    charges: 1,
    status: 409,
    reaction: 'query-later',
    sim: { latencyMs: [1500, 1500] },
    provoke: async (t) => {
      const key = newKey();
      const first = t.client.submitImage(imageBody(), key);
      // Resent while the service is still handling the first: wait for that state, not for a clock.
      while (t.sim.service.submissions.idempotency.inFlight === 0) await new Promise((r) => setTimeout(r, 5));
      try {
        return await t.client.submitImage(imageBody(), key);
      } finally {
        await first;
      }
    },
  },
  {
    code: 'IDEMPOTENCY_KEY_REUSED',
    charges: 1,
    status: 409,
    reaction: 'key-conflict',
    provoke: async (t) => {
      const key = newKey();
      await t.client.submitImage(imageBody('first'), key);
      return t.client.submitImage(imageBody('second'), key);
    },
  },
  {
    code: 'CONTENT_VIOLATION',
    status: 422,
    reaction: 'mark-item',
    provoke: (t) => t.client.submitImage(imageBody('a mug [sim:block]'), newKey()),
  },
  {
    code: 'RATE_LIMITED',
    charges: 2,
    status: 429,
    reaction: 'wait-and-resend',
    sim: { limits: { submissionsPerWindow: 2 } },
    provoke: async (t) => {
      await t.client.submitImage(imageBody('1'), newKey());
      await t.client.submitImage(imageBody('2'), newKey());
      return t.client.submitImage(imageBody('3'), newKey());
    },
    check: (e) => {
      expect(e.retryAfterMs).toBeGreaterThanOrEqual(1000);
      expect(e.rateLimitRemaining).toBe(0);
    },
  },
  {
    code: 'CONCURRENCY_LIMIT',
    charges: 1,
    status: 429,
    reaction: 'wait-and-resend',
    sim: { limits: { imagesInFlight: 1 }, imageSeconds: [600, 600] },
    provoke: async (t) => {
      await t.client.submitImage(imageBody('1'), newKey());
      return t.client.submitImage(imageBody('2'), newKey());
    },
    check: (e) => {
      expect(e.retryAfterMs).toBeGreaterThanOrEqual(1000);
      expect(e.rateLimitRemaining).toBe(0);
    },
  },
  {
    code: 'DAILY_CAP_REACHED',
    charges: 1,
    status: 429,
    reaction: 'wait-and-resend',
    sim: { keys: [{ label: 'main', dailyCap: 10 }] },
    provoke: async (t) => {
      await t.client.submitImage(imageBody('1'), newKey());
      return t.client.submitImage(imageBody('2'), newKey());
    },
    check: (e) => {
      expect(e.retryAfterMs).toBeGreaterThan(0);
      expect(e.rateLimitRemaining).toBe(2);
    },
  },
  {
    code: 'MODERATION_UNAVAILABLE',
    status: 503,
    reaction: 'resend-later',
    provoke: (t) => t.client.submitImage(imageBody('a mug [sim:moderation-unavailable]'), newKey()),
  },
  {
    code: 'UPSTREAM_UNAVAILABLE',
    status: 503,
    reaction: 'resend-later',
    provoke: (t) => t.client.submitImage(imageBody('a mug [sim:unavailable]'), newKey()),
  },
];

describe('every error code of the spec, from the simulator through the client', () => {
  it.each(cases.map((c, i) => [`${c.status} ${c.code} #${i}`, c] as const))('%s', async (_name, c) => {
    const t = await startTestSim(c.sim);
    const error = await rejection(c.provoke(t));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(c.status);
    expect(error.code).toBe(c.code);
    expect(error.message).toContain(c.code);
    expect(reactionTo(error).do).toBe(c.reaction);
    c.check?.(error, t);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(c.charges ?? 0);
  });

  it('stops eligibility once 30 submissions were blocked in the trailing 7 days', async () => {
    const t = await startTestSim({ limits: { submissionsPerWindow: 100 } });
    for (let i = 0; i < 30; i++) {
      const e = await rejection(t.client.submitImage(imageBody(`bad ${i} [sim:block]`), newKey()));
      expect(e.code).toBe('CONTENT_VIOLATION');
    }
    const e = await rejection(t.client.me());
    expect(e.code).toBe('API_NOT_ELIGIBLE');
    expect(t.sim.service.ledger.totals().charged).toBe(0);
  });
});
