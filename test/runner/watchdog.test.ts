import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ApiClient, Job } from '../../src/api/index.js';
import { loadManifest } from '../../src/manifest/index.js';
import { Runner, type RunEvent } from '../../src/runner/index.js';
import { makePng } from '../../src/simulator/media.js';
import { Store } from '../../src/store/index.js';

/**
 * A stall is a bug, and must be seen: a submission the service never
 * answers (no answer, no error, no timeout) leaves the run with nothing to
 * do. The watchdog says what each state waits for and raises a 'stall' event.
 */
describe('the run watchdog', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('fires on an injected stall, says what each state waits for, and the run goes on once the answer comes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-watchdog-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'm.yaml'), 'version: 1\ndefaults: { model: studio-lite }\nprices: { studio-lite: 2 }\nitems:\n  - { id: only, prompt: "a mug" }\n');
    const { loaded } = await loadManifest('m.yaml', dir);

    const job = { id: 'job_1', status: 'COMPLETED', outputs: [{ url: 'https://storage.test/1.png', downloadUrl: 'https://storage.test/1.png?sig=1' }], refunded: 0, charged: 2, raw: {} } as unknown as Job;
    let answer: ((job: Job) => void) | undefined;
    const client = {
      observeRemaining() {},
      observeAnswers() {},
      // The injected stall: the submission hangs, with no answer and no error.
      submitImage: () => new Promise<Job>((resolve) => (answer = resolve)),
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
      const limits = { submit: { count: 10, windowMs: 100 }, read: { count: 120, windowMs: 100 }, upload: { count: 30, windowMs: 100 }, imagesInFlight: 10, videosInFlight: 5, dailyCap: 20_000 };
      const events: RunEvent[] = [];
      const options = { outDir: join(dir, 'out'), limits, pollWaitSeconds: 30, maxRetries: 2, maxBlocked: 20, redoChanged: false, timeScale: 600, downloadConcurrency: 2, now: Date.now, quietMs: 200, onEvent: (e: RunEvent) => events.push(e) };
      const runner = new Runner([{ fingerprint: 'fp-watchdog', client, limits }], store, loaded!, options, undefined, { items: loaded!.items });
      const done = runner.run();

      await vi.waitFor(() => expect(events.some((e) => e.kind === 'stall')).toBe(true), { timeout: 5_000, interval: 20 });
      const stall = events.find((e) => e.kind === 'stall') as Extract<RunEvent, { kind: 'stall' }>;
      expect(stall.quietMs).toBeGreaterThanOrEqual(200);
      expect(stall.waiting).toEqual([{ state: 'submitting', items: 1, for: 'the answer to its submission' }]);
      answer!({ ...job, status: 'PROCESSING' } as Job);
      const summary = await done;
      expect(summary.counts.done).toBe(1);
    } finally {
      store.close();
    }
  });
});
