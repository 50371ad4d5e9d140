import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/index.js';
import { imageBody, newKey, rejection, startTestSim, type TestSim } from '../helpers/sim.js';

/** The simulator's time, moved only by the test: windows and job ends do not depend on the machine's speed. */
function manualClock(start = Date.now()) {
  let now = start;
  return { clock: { now: () => now }, advance: (ms: number) => (now += ms), set: (at: number) => (now = at) };
}

async function uploadImage(t: TestSim, target: 'image' | 'video'): Promise<string> {
  const bytes = Buffer.from('\x89PNG\r\n\x1a\nnot really a picture');
  const grant = await t.client.createUpload({ kind: 'image', target, contentType: 'image/png', size: bytes.length });
  await t.client.putUpload(grant.uploadUrl, bytes, 'image/png', bytes.length);
  return grant.key;
}

describe('per-key limits, as the spec sets them', () => {
  it('allows 10 submissions per window, refuses the 11th with RATE_LIMITED, and slides', async () => {
    // timeScale 60: the 60 s window lasts 1 s.
    const time = manualClock();
    const t = await startTestSim({ timeScale: 60, imageSeconds: [1, 1], clock: time.clock });
    for (let i = 0; i < 10; i++) await t.client.submitImage(imageBody(`p${i}`), newKey());
    const e = await rejection(t.client.submitImage(imageBody('p10'), newKey()));
    expect(e.code).toBe('RATE_LIMITED');
    expect(e.status).toBe(429);
    expect(e.rateLimitRemaining).toBe(0);
    time.advance(1001);
    await expect(t.client.submitImage(imageBody('p11'), newKey())).resolves.toMatchObject({ status: 'PROCESSING' });
    expect(t.sim.service.ledger.of('charge')).toHaveLength(11);
  });

  it('counts each key apart', async () => {
    const t = await startTestSim({
      keys: [{ label: 'main' }, { label: 'other' }],
      limits: { submissionsPerWindow: 1 },
    });
    await t.client.submitImage(imageBody('a'), newKey());
    expect((await rejection(t.client.submitImage(imageBody('b'), newKey()))).code).toBe('RATE_LIMITED');
    const other = new ApiClient({ baseUrl: t.sim.baseUrl, apiKey: t.sim.keys.other! });
    await expect(other.submitImage(imageBody('c'), newKey())).resolves.toBeDefined();
    await other.close();
  });

  it('allows 120 reads per window and refuses the 121st', async () => {
    const t = await startTestSim();
    for (let i = 0; i < 120; i++) await t.client.me();
    const e = await rejection(t.client.getJob('job_web_1'));
    expect(e.code).toBe('RATE_LIMITED');
    expect(Number.isInteger(e.retryAfterMs / 1000)).toBe(true);
  });

  it('allows 30 upload grants per window and refuses the 31st', async () => {
    const t = await startTestSim();
    const req = { kind: 'image', target: 'image', contentType: 'image/png', size: 10 } as const;
    for (let i = 0; i < 30; i++) await t.client.createUpload(req);
    expect((await rejection(t.client.createUpload(req))).code).toBe('RATE_LIMITED');
  });

  it('holds 10 image jobs in flight, then CONCURRENCY_LIMIT until one ends', async () => {
    const time = manualClock();
    const t = await startTestSim({
      limits: { submissionsPerWindow: 100 },
      timeScale: 60,
      imageSeconds: [60, 60],
      clock: time.clock,
    });
    for (let i = 0; i < 10; i++) await t.client.submitImage(imageBody(`p${i}`), newKey());
    const e = await rejection(t.client.submitImage(imageBody('p10'), newKey()));
    expect(e.code).toBe('CONCURRENCY_LIMIT');
    time.advance(e.retryAfterMs);
    await expect(t.client.submitImage(imageBody('p10'), newKey())).resolves.toBeDefined();
  });

  it('holds 5 video jobs in flight', async () => {
    const t = await startTestSim({ limits: { submissionsPerWindow: 100 }, videoSeconds: [600, 600] });
    const imageKey = await uploadImage(t, 'video');
    const video = (i: number) => ({
      prompt: `spin ${i}`,
      model: 'motion-2',
      duration: '5',
      resolution: '720p',
      aspectRatio: '16:9',
      imageKey,
    });
    for (let i = 0; i < 5; i++) await t.client.submitVideo(video(i), newKey());
    expect((await rejection(t.client.submitVideo(video(5), newKey()))).code).toBe('CONCURRENCY_LIMIT');
    // Images have their own pool.
    await expect(t.client.submitImage(imageBody(), newKey())).resolves.toBeDefined();
  });

  it('refuses past the daily cap with DAILY_CAP_REACHED and accepts again the next key day', async () => {
    // timeScale 43200: a day lasts 2 s.
    const time = manualClock(Math.ceil(Date.now() / 2000) * 2000 + 20); // the top of a key day, so all three land in one
    const t = await startTestSim({ timeScale: 43_200, keys: [{ label: 'main', dailyCap: 16 }], clock: time.clock });
    await t.client.submitImage(imageBody('1'), newKey());
    await t.client.submitImage(imageBody('2'), newKey());
    const e = await rejection(t.client.submitImage(imageBody('3'), newKey()));
    expect(e.code).toBe('DAILY_CAP_REACHED');
    expect(e.retryAfterMs).toBeLessThanOrEqual(2000);
    time.advance(e.retryAfterMs);
    await expect(t.client.submitImage(imageBody('3'), newKey())).resolves.toBeDefined();
    const me = await t.client.me();
    expect(me.dailyCap).toBe(16);
  });
});
