import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../src/library/outcome.js';
import { readSnapshot } from '../../src/metrics/snapshot.js';
import { StateMetrics } from '../../src/metrics/registry.js';
import { collectStatus, writeReport } from '../../src/report/index.js';
import { BucketError, stagingDirFor, type Patience } from '../../src/sink/index.js';
import { Store } from '../../src/store/index.js';
import { FakeBucket, fakeBucketSink } from '../helpers/fake-bucket.js';
import { runInProcess } from '../helpers/in-process.js';
import { readState, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

const manifest = `version: 1
defaults: { model: studio-lite }
derivatives:
  - { format: webp, width: 96 }
  - { format: jpeg, width: 64 }
checks: { blank: true }
items:
  - { id: mug, prompt: "a mug" }
  - { id: bowl, prompt: "a bowl" }
  - { id: grey, prompt: "a grey mug [sim:flat]" }
`;

/** Shrunken: silence given up after 150 ms, backoffs from 5 ms. */
const PATIENCE: Patience = { idleTimeoutMs: 150, unreachableMs: 60_000, backoff: { firstMs: 5, longestMs: 100 } };

/** Every way a bucket fails a call that waiting mends, in turn; then the call goes through. */
const WAYS = ['SlowDown', 'InternalError', 'TooManyRequests', 'ECONNREFUSED', 'ECONNRESET', 'silent'] as const;

/** Each call (by operation and key) meets every fault once, in turn, before the bucket answers it. */
function failingOnceEachWay(bucket: FakeBucket): Map<string, number> {
  const met = new Map<string, number>();
  bucket.fault = (op, key) => {
    const n = met.get(`${op} ${key}`) ?? 0;
    met.set(`${op} ${key}`, n + 1);
    const way = WAYS[n];
    if (way === undefined) return undefined;
    if (way === 'silent') return way;
    return way.startsWith('E') ? { fault: 'unreachable', code: way } : { fault: 'slow-down', code: way };
  };
  return met;
}

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Files left in the staging folder: outputs and copies (not its folders). */
function staged(statePath: string): string[] {
  const dir = stagingDirFor(statePath);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(png|webp|jpg)$/.test(f));
}

describe("a bucket's faults on every call of a run", () => {
  it('each call meeting a slow-down, a 500, a 429, a refusal, a reset and silence in turn: every output and copy lands once, verified, exit 0', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest);
    const bucket = new FakeBucket();
    const met = failingOnceEachWay(bucket);
    // An answer lost after the bucket stored the object: the same put again finds it there (If-None-Match).
    const putNew = bucket.putNew.bind(bucket);
    const lostOnce = new Set<string>();
    bucket.putNew = async (key, source, call) => {
      const result = await putNew(key, source, call);
      if (!lostOnce.has(key)) {
        lostOnce.add(key);
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      }
      return result;
    };
    const kinds: string[] = [];
    const sink = fakeBucketSink(bucket, ws.statePath, 'spring', PATIENCE);
    const summary = await runInProcess(t, ws, {
      outputs: sink,
      listen: (r) => r.events.on((e) => kinds.push(e.kind)),
    });
    expect(exitCodeOf(summary)).toBe(0);
    expect(summary.copies.missing).toBe(0);
    expect(summary.publication).toMatchObject({ published: 9, waiting: 0, copiesPublished: 6, copiesWaiting: 0 });

    const state = readState(ws.statePath);
    const db = Store.open(ws.statePath);
    try {
      for (const o of state.outputs as unknown as { job_id: string; idx: number; path: string; sha256: string }[]) {
        const object = bucket.objects.get(`spring/${o.path}`)!;
        expect(sha(object.bytes)).toBe(o.sha256);
        const copies = db.webCopies.ofOutput(o.job_id, o.idx);
        expect(copies).toHaveLength(2);
        for (const c of copies) {
          const copy = bucket.objects.get(`spring/${c.path}`)!;
          expect(copy, c.path).toBeDefined();
          expect(sha(copy.bytes)).toBe(c.sha256);
          expect(copy.sha256).toBe(c.sha256);
        }
      }
      // The flat frame is rejected with its reason, though every read of it met the faults.
      expect(db.reviews.rejectedCurrent()).toEqual(['grey']);

      // The results and the gallery meet the same faults, and land.
      const written = await writeReport(db, sink, {
        title: 'm',
        html: true,
        sidecars: true,
        now: Date.now(),
        budget: null,
      });
      expect(written.items).toBe(3);
    } finally {
      db.close();
    }
    for (const key of ['spring/results.jsonl', 'spring/results.csv', 'spring/index.html', 'spring/mug-1.png.json'])
      expect(bucket.objects.has(key), key).toBe(true);
    // Every object was put once: 3 outputs and 6 copies, create-only, none twice.
    expect(bucket.outputKeys()).toHaveLength(3);
    expect(bucket.copyKeys()).toHaveLength(6);
    expect(bucket.puts).toHaveLength(9);
    expect(new Set(bucket.puts).size).toBe(9);
    // The faults were met and ridden out by the one policy: no publication failed, the outage was said and ended.
    expect(Math.min(...[...met.values()])).toBeGreaterThanOrEqual(1);
    expect([...met.values()].filter((n) => n > WAYS.length).length).toBeGreaterThan(0);
    expect(bucket.abandoned).toBeGreaterThanOrEqual(9);
    expect(kinds).not.toContain('publish-failed');
    expect(kinds).not.toContain('copy-failed');
    expect(kinds).toContain('bucket-outage');
    expect(staged(ws.statePath)).toEqual([]);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });

  it('copies that could not be made (the bucket gave up on reading an original) end the run with exit 4 and a count, never a crash; the same command makes them', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest);
    const bucket = new FakeBucket();
    const giving = fakeBucketSink(bucket, ws.statePath, 'spring', PATIENCE);
    // What a bucket past --unreachable-minutes throws where the copier reads an original back.
    giving.open = async () => {
      throw new BucketError('HEAD s3://catalog/spring/mug-1.png: ECONNREFUSED', 'unreachable', 'ECONNREFUSED');
    };
    const failed: string[] = [];
    const first = await runInProcess(t, ws, {
      outputs: giving,
      listen: (r) => r.events.on((e) => e.kind === 'copy-failed' && failed.push(e.itemId)),
    });
    expect(exitCodeOf(first)).toBe(4);
    expect(first.copies.missing).toBe(6);
    const snapshot = readSnapshot(ws.statePath, Date.now());
    expect(snapshot.copiesMissing).toBe(6);
    expect(failed.sort()).toEqual(['bowl', 'grey', 'mug']);
    // The originals are paid for and published all the same.
    expect(first.publication).toMatchObject({ published: 3, waiting: 0 });

    const second = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath, 'spring', PATIENCE) });
    expect(exitCodeOf(second)).toBe(0);
    expect(second.copies.missing).toBe(0);
    expect(bucket.copyKeys()).toHaveLength(6);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });

  it('a copy staged and recorded but not yet published when the run stopped is published by the same command; one whose staged file is gone is made again', async () => {
    const t = await startTestSim({ timeScale: 600 });
    const ws = workspace(t.sim, manifest);
    const bucket = new FakeBucket();
    // Copies are refused (a policy on their keys): the originals land, the copies wait staged.
    bucket.fault = (op, key) =>
      op === 'putNew' && /\.(webp|jpg)$/.test(key) ? { fault: 'denied', code: 'AccessDenied' } : undefined;
    const first = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath, 'spring', PATIENCE) });
    expect(exitCodeOf(first)).toBe(4);
    expect(first.publication!.copiesWaiting).toBeGreaterThan(0);
    const waiting = staged(ws.statePath).filter((f) => !f.endsWith('.png'));
    expect(waiting.length).toBe(first.publication!.copiesWaiting);
    // status and the metrics count them as waiting.
    const store = Store.open(ws.statePath);
    const status = collectStatus(store, { manifest: 'm.yaml', state: ws.statePath }, Date.now());
    store.close();
    const p = status.publication!;
    expect(p.copiesWaiting).toBe(waiting.length);
    // Outputs are staged too where the denial stopped publishing before them (.png in the staging folder).
    expect(p.waiting - p.copiesWaiting).toBe(staged(ws.statePath).length - waiting.length);
    const metrics = new StateMetrics();
    metrics.fill(readSnapshot(ws.statePath, Date.now()));
    const scraped = await metrics.registry.metrics();
    expect(scraped).toContain(`genbatch_files_to_publish{kind="copy"} ${p.copiesWaiting}`);
    expect(scraped).toContain(`genbatch_files_to_publish{kind="output"} ${p.waiting - p.copiesWaiting}`);
    expect(scraped).toContain(`genbatch_files_published_total{kind="output"} ${p.published - p.copiesPublished}`);
    // One staged copy is lost meanwhile.
    const { rmSync } = await import('node:fs');
    rmSync(`${stagingDirFor(ws.statePath)}/${waiting[0]}`);

    bucket.fault = () => undefined;
    const second = await runInProcess(t, ws, { outputs: fakeBucketSink(bucket, ws.statePath, 'spring', PATIENCE) });
    expect(exitCodeOf(second)).toBe(0);
    expect(bucket.copyKeys()).toHaveLength(6);
    expect(new Set(bucket.puts).size).toBe(bucket.puts.length);
    expect(staged(ws.statePath)).toEqual([]);
    expect(t.sim.service.ledger.of('charge')).toHaveLength(3);
  });
});
