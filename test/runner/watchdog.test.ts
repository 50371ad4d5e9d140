import { describe, expect, it, vi } from 'vitest';
import type { Job } from '../../src/api/index.js';
import type { RunEvent } from '../../src/runner/index.js';
import { completedJob, fakeRun } from '../helpers/fake-run.js';

/**
 * A stall is a bug, and must be seen: a submission the service never
 * answers (no answer, no error, no timeout) leaves the run with nothing to
 * do. The watchdog says what each state waits for and raises a 'stall' event.
 */
describe('the run watchdog', () => {
  it('fires on an injected stall, says what each state waits for, and the run goes on once the answer comes', async () => {
    let answer: ((job: Job) => void) | undefined;
    const events: RunEvent[] = [];
    const limits = {
      submit: { count: 10, windowMs: 100 },
      read: { count: 120, windowMs: 100 },
      upload: { count: 30, windowMs: 100 },
      maxImagesInFlight: 10,
      maxVideosInFlight: 5,
      dailyCap: 20_000,
    };
    // The injected stall: the submission hangs, with no answer and no error.
    const run = await fakeRun({ submitImage: () => new Promise<Job>((resolve) => (answer = resolve)) }, limits, {
      quietMs: 200,
      onEvent: (e) => events.push(e),
    });
    try {
      await vi.waitFor(() => expect(events.some((e) => e.kind === 'stall')).toBe(true), {
        timeout: 5_000,
        interval: 20,
      });
      const stall = events.find((e) => e.kind === 'stall') as Extract<RunEvent, { kind: 'stall' }>;
      expect(stall.quietMs).toBeGreaterThanOrEqual(200);
      expect(stall.waiting).toEqual([{ state: 'submitting', items: 1, for: 'the answer to its submission' }]);
      answer!({ ...completedJob, status: 'PROCESSING' } as Job);
      const summary = await run.done;
      expect(summary.counts.done).toBe(1);
    } finally {
      run.cleanUp();
    }
  });
});
