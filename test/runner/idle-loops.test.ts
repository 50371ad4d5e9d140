import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, type Job } from '../../src/api/index.js';
import { ReadyQueue } from '../../src/store/ready-queue.js';
import { completedJob, fakeRun } from '../helpers/fake-run.js';

/**
 * A run that waits (here: a resend held by the service) costs no CPU: its
 * feed loops sleep until an event, however high the time scale. They once
 * looked at the state every millisecond while a deferred resend waited to go,
 * a core's worth of polling for as long as the resend waited for its window.
 */
describe('a waiting run does not poll', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('while a deferred resend waits for the key’s window, the feed loops wait for its end instead of asking the state again', async () => {
    let posts = 0;
    const submitImage = async (): Promise<Job> => {
      // The first answer defers the resend (no job was made); the resend then waits for the key's window.
      if (++posts === 1) throw new ApiError(503, 'UPSTREAM_UNAVAILABLE', 'busy', {}, 1, undefined, 'POST', '/images');
      return { ...completedJob, status: 'QUEUED' } as Job;
    };
    // One submission a second: the resend waits most of a second for the window after the first answer.
    const limits = {
      submit: { count: 1, windowMs: 1000 },
      read: { count: 120, windowMs: 100 },
      upload: { count: 30, windowMs: 100 },
      maxImagesInFlight: 10,
      maxVideosInFlight: 5,
      dailyCap: 20_000,
    };
    const { runner, done, cleanUp } = await fakeRun({ submitImage }, limits);
    try {
      const submit = runner.lanes.all[0]!.windows.submit;
      await vi.waitFor(() => expect(posts === 1 && submit.waiting === 1).toBe(true), { timeout: 5000, interval: 5 });
      const looks = vi.spyOn(ReadyQueue.prototype, 'nextDue');
      // A scaled second is 1.7 ms at 600x: a loop that polled would look about a hundred times in this while.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const looked = looks.mock.calls.length;
      const stillWaiting = submit.waiting;
      const summary = await done;

      expect(stillWaiting).toBe(1);
      expect(summary.counts.done).toBe(1);
      expect(posts).toBe(2);
      expect(summary.credits.charged).toBe(2);
      expect(looked).toBeLessThanOrEqual(4);
    } finally {
      cleanUp();
    }
  });
});
