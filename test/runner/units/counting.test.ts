import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StateMetrics } from '../../../src/metrics/registry.js';
import { readSnapshot } from '../../../src/metrics/snapshot.js';
import type { RunEvent } from '../../../src/runner/index.js';
import { countEvents } from '../../../src/runner/watch/counting.js';
import { Transfers } from '../../../src/scheduler/transfers.js';
import { Store } from '../../../src/store/index.js';
import { EventBus } from '../../../src/util/event-bus.js';

describe('what a run counts for metrics', () => {
  it('outages, stalled transfers, 429s, failures and stalls add up in the state across runs, and reach the scrape', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-counts-')), 's.sqlite');
    const store = Store.open(path);
    let now = 100_000;
    for (const life of [1, 2]) {
      const bus = new EventBus<RunEvent>();
      const stop = countEvents(store, bus, () => now, undefined);
      bus.emit({ kind: 'submitted', itemId: 'a', attempt: 1, keyFp: 'k1', resend: false });
      bus.emit({ kind: 'rate-limited', keyFp: 'k1', limit: 'submit', code: 'RATE_LIMITED', retryAfterMs: 100 });
      bus.emit({ kind: 'outage', phase: 'down', since: now - 2_500 });
      bus.emit({ kind: 'outage', phase: 'up', since: now - 2_500 });
      bus.emit({
        kind: 'transfer-stall-ended',
        itemId: 'a',
        transfer: 'download',
        since: now - 1_500,
        stalledMs: 1_500,
        how: 'ended',
      });
      bus.emit({ kind: 'download-failed', itemId: 'a', jobId: 'j', output: 0, code: 'STALLED', retry: true });
      bus.emit({ kind: 'stall', quietMs: 120_000, waiting: [] });
      stop();
      now += 10_000 * life;
    }
    store.close();
    const metrics = new StateMetrics();
    metrics.fill(readSnapshot(path, now));
    const text = await metrics.registry.metrics();
    expect(text).toContain('genbatch_submissions_total{key="k1"} 2');
    expect(text).toContain('genbatch_rate_limited_total{key="k1",code="RATE_LIMITED"} 2');
    expect(text).toContain('genbatch_outage_seconds_total 5');
    expect(text).toContain('genbatch_stalled_transfer_seconds_total 3');
    expect(text).toContain('genbatch_download_failures_total{code="STALLED"} 2');
    expect(text).toContain('genbatch_stalls_total 2');
  });

  it("a stalled transfer's silence is said to end when it moves again, or when it ends", async () => {
    let now = 0;
    const ended: [string, number, string][] = [];
    let bothStalled!: () => void;
    const stalled = new Promise<void>((r) => {
      bothStalled = r;
    });
    const reported: string[] = [];
    const transfers = new Transfers(
      2,
      50,
      () => now,
      (label) => {
        if (reported.push(label) === 2) bothStalled();
      },
      (label, since, how) => ended.push([label, since, how]),
    );
    let resume!: () => void;
    const moving = transfers.add('moves', async (p) => {
      p.began();
      await new Promise<void>((r) => {
        resume = r;
      });
      p.moved();
      p.ended();
    });
    let finish!: () => void;
    const abandoned = transfers.add('ends', async (p) => {
      p.began();
      await new Promise<void>((r) => {
        finish = r;
      });
    });
    now = 1_000;
    // The sweep sees both silent past 50 ms and reports them stalled; then one moves and one ends.
    await stalled;
    resume();
    await moving;
    finish();
    await abandoned;
    expect(ended).toEqual([
      ['moves', 0, 'moved'],
      ['ends', 0, 'ended'],
    ]);
  });
});
