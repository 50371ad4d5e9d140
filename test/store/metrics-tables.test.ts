import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JOB_SECONDS_BUCKETS, Store } from '../../src/store/index.js';

/** Items with tags, charged through the item's own transitions: some refunded, some resent with another key. */
function storeWithRuns(): Store {
  const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-metrics-tables-')), 's.sqlite'));
  const start = 1_000_000;
  store.itemSync.sync(
    (function* () {
      for (let i = 0; i < 30; i++) {
        const tags = i % 3 === 0 ? ['spring', 'mugs'] : i % 3 === 1 ? ['spring'] : [];
        const spec = {
          id: `i${i}`,
          type: (i % 5 ? 'image' : 'video') as 'image' | 'video',
          model: 'm',
          prompt: `p${i}`,
          tags,
        };
        yield {
          id: spec.id,
          seq: i,
          type: spec.type,
          model: 'm',
          contentHash: `h${i}`,
          spec: JSON.stringify(spec),
          dependsOn: [],
        };
      }
    })(),
    start,
    false,
  );
  store.tx(() => {
    for (let i = 0; i < 30; i++) {
      const id = `i${i}`;
      const at = start + i * 1_000;
      const key = i % 2 ? 'fp-a' : 'fp-b';
      store.lifecycle.startAttempt(id, 1, `k-${i}`, '{}', at, key);
      store.lifecycle.recordSent(id, 1, at, key);
      store.lifecycle.recordAccepted(id, 1, `job-${i}`, 4 + (i % 4), 0, at + 10);
      const failed = i % 7 === 3;
      store.lifecycle.recordEnded(
        id,
        1,
        {
          jobId: `job-${i}`,
          status: failed ? 'failed' : 'completed',
          refunded: failed ? 4 + (i % 4) : 0,
          refundDay: 0,
        },
        at + 10 + i * 7_000,
      );
    }
  });
  return store;
}

describe('the tables genbatch metrics reads', () => {
  it("credits per key and per tag, and the jobs' run times, agree with the attempts they are kept from", () => {
    const store = storeWithRuns();
    const attempts = store.db
      .prepare(
        'SELECT a.key_fp, a.charged, a.refunded, a.accepted_at, a.ended_at, i.type, i.spec FROM attempts a JOIN items i ON i.id = a.item_id',
      )
      .all() as {
      key_fp: string;
      charged: number;
      refunded: number;
      accepted_at: number;
      ended_at: number;
      type: string;
      spec: string;
    }[];
    const byKey = new Map<string, [number, number]>();
    const byTag = new Map<string, [number, number]>();
    for (const a of attempts) {
      const k = byKey.get(a.key_fp) ?? [0, 0];
      byKey.set(a.key_fp, [k[0] + a.charged, k[1] + a.refunded]);
      for (const tag of (JSON.parse(a.spec) as { tags: string[] }).tags) {
        const t = byTag.get(tag) ?? [0, 0];
        byTag.set(tag, [t[0] + a.charged, t[1] + a.refunded]);
      }
    }
    expect(store.metrics.creditsByKey().map((r) => [r.key_fp, [r.charged, r.refunded]])).toEqual(
      [...byKey].sort(([a], [b]) => a.localeCompare(b)),
    );
    expect(store.metrics.creditsByTag().map((r) => [r.tag, [r.charged, r.refunded]])).toEqual(
      [...byTag].sort(([a], [b]) => a.localeCompare(b)),
    );
    expect(store.metrics.creditsByTag().find((r) => r.tag === 'mugs')!.refunded).toBeGreaterThan(0);
    const jobs = store.metrics.jobSeconds();
    for (const type of ['image', 'video']) {
      const mine = attempts.filter((a) => a.type === type).map((a) => (a.ended_at - a.accepted_at) / 1000);
      const rows = jobs.filter((j) => j.type === type);
      expect(rows.reduce((n, r) => n + r.n, 0)).toBe(mine.length);
      expect(rows.reduce((s, r) => s + r.sum, 0)).toBeCloseTo(
        mine.reduce((s, d) => s + d, 0),
        6,
      );
      // Each job under the first bound it fits.
      for (const r of rows) {
        const below = [...JOB_SECONDS_BUCKETS].filter((b) => b < r.le).at(-1) ?? Number.NEGATIVE_INFINITY;
        expect(mine.filter((d) => d > below && d <= r.le)).toHaveLength(r.n);
      }
    }
    store.close();
  });
});
