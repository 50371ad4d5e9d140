import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { BucketError, SnapshotKeeper } from '../../src/sink/index.js';
import { Store } from '../../src/store/index.js';
import { FakeBucket, fakeBucketSink } from '../helpers/fake-bucket.js';

/** A state with a mark of its own in its meta, so a restored copy says which it is. */
function stateWith(path: string, mark: string): Store {
  const store = Store.open(path);
  store.setMeta('mark', mark);
  return store;
}

/** Restores the newest whole snapshot of `bucket` into a fresh path: the mark it holds. */
async function restoredMark(bucket: FakeBucket): Promise<string | undefined> {
  const path = join(mkdtempSync(join(tmpdir(), 'genbatch-restore-')), 'ml.sqlite');
  const restored = await fakeBucketSink(bucket, path, 'ml').snapshots.restore(Store.damage);
  if (!restored) return undefined;
  const store = Store.openReadOnly(path);
  try {
    return store.meta('mark');
  } finally {
    store.close();
  }
}

describe("the state's snapshots beside the outputs", () => {
  it('a kill at any instant of a snapshot leaves a state that restores whole: the one before, or the new one', async () => {
    for (const dies of ['putNew', 'putReplace', 'delete', 'never'] as const) {
      const dir = mkdtempSync(join(tmpdir(), 'genbatch-snap-'));
      const bucket = new FakeBucket();
      const snapshots = fakeBucketSink(bucket, join(dir, 'ml.sqlite'), 'ml').snapshots;
      const store = stateWith(join(dir, 'ml.sqlite'), 'first');
      try {
        for (const mark of ['first', 'second', 'third']) {
          store.setMeta('mark', mark);
          await snapshots.take(store);
        }
        store.setMeta('mark', 'fourth');
        // The process dies at that call: nothing after it happens (a denial is thrown at once, never retried).
        bucket.fault = (op) => (op === dies ? { fault: 'denied', code: 'KILLED' } : undefined);
        const taking = snapshots.take(store);
        if (dies === 'never' || dies === 'delete') await taking.catch(() => undefined);
        else await expect(taking).rejects.toThrow(BucketError);
        bucket.fault = () => undefined;
        // Before the pointer names the new snapshot, the one before is restored; after, the new one.
        expect(await restoredMark(bucket)).toBe(dies === 'putNew' || dies === 'putReplace' ? 'third' : 'fourth');
      } finally {
        store.close();
      }
    }
  });

  it('a torn snapshot is refused and the one before is restored, saying which was passed over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-snap-'));
    const bucket = new FakeBucket();
    const snapshots = fakeBucketSink(bucket, join(dir, 'ml.sqlite'), 'ml').snapshots;
    const store = stateWith(join(dir, 'ml.sqlite'), 'older');
    await snapshots.take(store);
    store.setMeta('mark', 'newer');
    const newest = await snapshots.take(store);
    store.close();
    const object = bucket.objects.get(newest.key)!;
    bucket.objects.set(newest.key, { ...object, bytes: object.bytes.subarray(0, object.bytes.length >> 1) });
    const path = join(mkdtempSync(join(tmpdir(), 'genbatch-restore-')), 'ml.sqlite');
    const restored = (await fakeBucketSink(bucket, path, 'ml').snapshots.restore(Store.damage))!;
    expect(restored.skipped).toEqual([`${newest.key}: its bytes are not the ones recorded (torn)`]);
    expect(Store.openReadOnly(path).meta('mark')).toBe('older');
  });

  it('keeps the newest three, and restores nothing where none was taken', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-snap-'));
    const bucket = new FakeBucket();
    const snapshots = fakeBucketSink(bucket, join(dir, 'ml.sqlite'), 'ml').snapshots;
    expect(await restoredMark(bucket)).toBeUndefined();
    const store = stateWith(join(dir, 'ml.sqlite'), 'a');
    for (let i = 0; i < 5; i++) {
      store.setMeta('mark', `m${i}`);
      await snapshots.take(store);
    }
    store.close();
    expect([...bucket.objects.keys()].filter((k) => k.endsWith('.sqlite.gz'))).toHaveLength(3);
    expect(await restoredMark(bucket)).toBe('m4');
    // The copy, its packed file and the pointer's are gone from the local disk once put.
    expect(readdirSync(join(dir, 'ml.staging'))).toEqual([]);
  });

  it('while in use, a changed state is snapshot at each turn, an unchanged one is not, and none while it may not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-snap-'));
    const bucket = new FakeBucket();
    const snapshots = fakeBucketSink(bucket, join(dir, 'ml.sqlite'), 'ml').snapshots;
    const store = stateWith(join(dir, 'ml.sqlite'), 'a');
    let allowed = true;
    const taken: string[] = [];
    const keeper = new SnapshotKeeper(snapshots, () => store, {
      everyMs: 40,
      allowed: () => allowed,
      said: (what) => 'taken' in what && taken.push(what.taken.key),
    });
    const count = () => [...bucket.objects.keys()].filter((k) => k.endsWith('.sqlite.gz')).length;
    keeper.start();
    try {
      await vi.waitFor(() => expect(taken).toHaveLength(1), { timeout: 5_000, interval: 10 });
      // Nothing changed: several turns pass (the timer's), and none takes a snapshot.
      const turns = taken.length;
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(taken).toHaveLength(turns);
      store.setMeta('mark', 'b');
      await vi.waitFor(() => expect(taken).toHaveLength(2), { timeout: 5_000, interval: 10 });
      allowed = false;
      store.setMeta('mark', 'c');
      await keeper.end();
      expect(count()).toBe(2);
      expect(await restoredMark(bucket)).toBe('b');
    } finally {
      store.close();
    }
  });
});
