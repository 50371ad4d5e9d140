import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, type ApiClient, type Job } from '../../src/api/index.js';
import { loadManifest } from '../../src/manifest/index.js';
import { Runner } from '../../src/runner/index.js';
import { makePng } from '../../src/simulator/media.js';
import { Store } from '../../src/store/index.js';
import { Items } from '../../src/store/items.js';

/**
 * A run that waits (here: a resend held by the service) costs no CPU: its
 * feed loops sleep until an event, however high the time scale. They once
 * looked at the state every millisecond while a deferred resend waited to go,
 * a core's worth of polling for as long as the resend waited for its window.
 */
describe('a waiting run does not poll', () => {
  const dirs: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('while a deferred resend waits for the key’s window, the feed loops wait for its end instead of asking the state again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-idle-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'm.yaml'), 'version: 1\ndefaults: { model: studio-lite }\nprices: { studio-lite: 2 }\nitems:\n  - { id: only, prompt: "a mug" }\n');
    const { loaded } = await loadManifest('m.yaml', dir);

    let posts = 0;
    const job = { id: 'job_1', status: 'COMPLETED', outputs: [{ url: 'https://storage.test/1.png', downloadUrl: 'https://storage.test/1.png?sig=1' }], refunded: 0, charged: 2, raw: {} } as unknown as Job;
    const client = {
      observeRemaining() {},
      observeAnswers() {},
      async submitImage(): Promise<Job> {
        // The first answer defers the resend (no job was made); the resend then waits for the key's window.
        if (++posts === 1) throw new ApiError(503, 'UPSTREAM_UNAVAILABLE', 'busy', {}, 1, undefined, 'POST', '/images');
        return { ...job, status: 'QUEUED' } as Job;
      },
      async getJob(): Promise<Job> {
        return job;
      },
      async download() {
        const bytes = makePng('only');
        return { body: Readable.from([bytes]), contentLength: bytes.length, contentType: 'image/png', cancel() {} };
      },
    } as unknown as ApiClient;

    const store = Store.open(join(dir, 'state.sqlite'));
    try {
      // One submission a second: the resend waits most of a second for the window after the first answer.
      const limits = { submit: { count: 1, windowMs: 1000 }, read: { count: 120, windowMs: 100 }, upload: { count: 30, windowMs: 100 }, imagesInFlight: 10, videosInFlight: 5, dailyCap: 20_000 };
      const options = { outDir: join(dir, 'out'), limits, pollWaitSeconds: 30, maxRetries: 2, maxBlocked: 20, redoChanged: false, timeScale: 600, downloadConcurrency: 2, now: Date.now };
      const runner = new Runner([{ fingerprint: 'fp-idle', client, limits }], store, loaded!, options, undefined, { items: loaded!.items });
      const done = runner.run();

      const submit = runner.lanes.all[0]!.buckets.submit;
      await vi.waitFor(() => expect(posts === 1 && submit.waiting === 1).toBe(true), { timeout: 5000, interval: 5 });
      const looks = vi.spyOn(Items.prototype, 'nextDue');
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
      store.close();
    }
  });
});
