import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';

describe('the running tallies agree with the rows they count', () => {
  // 200 sequences: 16 s alone on a 2-core machine, 31 s once beside the suite's other workers.
  it('counts by state and type, items ever submitted, and credit totals, after any sequence of transitions', () => {
    const op = fc.record({
      item: fc.integer({ min: 0, max: 5 }),
      act: fc.integer({ min: 0, max: 9 }),
      credits: fc.integer({ min: 0, max: 40 }),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-tally-')), 's.sqlite'));
        try {
          const ids = Array.from({ length: 6 }, (_, i) => `i${i}`);
          store.itemSync.sync(
            ids.map((id, seq) => ({
              id,
              seq,
              type: seq % 2 ? 'video' : 'image',
              model: 'm',
              contentHash: 'h',
              spec: '{}',
              dependsOn: [],
            })),
            1,
            false,
          );
          let t = 2;
          for (const { item, act, credits } of ops) {
            const id = ids[item]!;
            const n = store.items.get(id)!.attempt;
            const life = store.lifecycle;
            [
              () => life.startAttempt(id, n + 1, `${id}-${n + 1}`, '{}', t, 'fp-a'),
              () => life.recordSent(id, n, t, 'fp-a'),
              () => life.recordAccepted(id, n, `job-${id}-${n}`, credits, 0, t),
              () =>
                life.recordEnded(
                  id,
                  n,
                  { jobId: `job-${id}-${n}`, status: 'failed', refunded: credits, refundDay: 0 },
                  t,
                ),
              () =>
                life.recordEnded(id, n, { jobId: `job-${id}-${n}`, status: 'completed', refunded: 0, refundDay: 0 }, t),
              () => life.downloaded(id, t),
              () => life.requeue(id, t),
              () => life.endWithoutOutput(id, 'failed', { code: 'X', message: 'm' }, t),
              () => life.recordRefused(id, n, { code: 'X', message: 'm' }, 'pending', t),
              () => store.items.putBack({ now: t }),
            ][act]!();
            t++;
          }
          const direct = store.db.prepare('SELECT state, count(*) AS n FROM items GROUP BY state').all() as {
            state: string;
            n: number;
          }[];
          const counts = store.itemReports.counts();
          for (const { state, n } of direct) expect(counts[state as keyof typeof counts]).toBe(n);
          expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(6);
          const work = store.itemReports.workByType();
          const submitted = store.db.prepare('SELECT type, sum(attempt > 0) AS s FROM items GROUP BY type').all() as {
            type: 'image' | 'video';
            s: number;
          }[];
          for (const { type, s } of submitted) expect(work[type].submitted).toBe(s);
          expect(store.attempts.totals()).toEqual(
            store.db
              .prepare(
                'SELECT coalesce(sum(charged), 0) AS charged, coalesce(sum(refunded), 0) AS refunded FROM attempts',
              )
              .get(),
          );
        } finally {
          store.close();
        }
      }),
      { numRuns: 200, seed: 7 },
    );
  }, 90_000);
});
