import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SendBatch } from '../../src/runner/item/send-batch.js';
import { Lifecycle } from '../../src/store/lifecycle.js';
import { Store } from '../../src/store/index.js';
import { imageManifest, workspace } from '../helpers/run.js';
import { startTestSim } from '../helpers/sim.js';

let store: Store | undefined;
afterEach(() => {
  store?.close();
  store = undefined;
  vi.restoreAllMocks();
});

function withAttempts(ids: string[]): Store {
  store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-sends-')), 's.sqlite'));
  store.itemSync.sync(
    ids.map((id, seq) => ({
      id,
      seq,
      type: 'image' as const,
      model: 'm',
      contentHash: 'h',
      spec: '{}',
      dependsOn: [],
    })),
    1,
    false,
  );
  for (const id of ids) store.lifecycle.startAttempt(id, 1, `key-${id}`, '{}', 2, 'fp-a');
  return store;
}

describe('the records of submissions leaving together', () => {
  it('are committed in one transaction, each guarded as alone, before any of them may leave', async () => {
    const s = withAttempts(['a', 'b', 'c']);
    const batches = vi.spyOn(s.lifecycle, 'recordSentAll');
    const sends = new SendBatch(s);
    const asked = [
      sends.record({ id: 'a', n: 1, now: 3, keyFp: 'fp-a' }),
      // Bound to fp-a: never sent with another key.
      sends.record({ id: 'b', n: 1, now: 3, keyFp: 'fp-b' }),
      sends.record({ id: 'c', n: 1, now: 3, keyFp: 'fp-a' }),
    ];
    // Nothing is committed in the turn they were asked in.
    expect(s.items.get('a')!.state).toBe('queued');
    expect(await Promise.all(asked)).toEqual([true, false, true]);
    expect(batches).toHaveBeenCalledTimes(1);
    expect(['a', 'b', 'c'].map((id) => s.items.get(id)!.state)).toEqual(['submitting', 'queued', 'submitting']);
  });

  it('a commit that fails lets none of its requests leave', async () => {
    const s = withAttempts(['a', 'b']);
    vi.spyOn(s.lifecycle, 'recordSentAll').mockImplementation(() => {
      throw new Error('SQLITE_FULL: database or disk is full');
    });
    const sends = new SendBatch(s);
    const asked = [
      sends.record({ id: 'a', n: 1, now: 3, keyFp: 'fp-a' }),
      sends.record({ id: 'b', n: 1, now: 3, keyFp: 'fp-a' }),
    ];
    for (const result of await Promise.allSettled(asked)) expect(result.status).toBe('rejected');
  });

  it("a run's first window goes as one commit, and each submission reaches the service only after it", async () => {
    const commits: { ids: string[]; at: number }[] = [];
    const recordSentAll = Lifecycle.prototype.recordSentAll;
    vi.spyOn(Lifecycle.prototype, 'recordSentAll').mockImplementation(function (this: Lifecycle, sends) {
      const results = recordSentAll.call(this, sends);
      commits.push({ ids: sends.map((s) => s.id), at: Date.now() });
      return results;
    });
    // At the real pace: a scaled key day (24 min at 60x) may end during the first window, and none leaves in its last moments.
    const t = await startTestSim({ timeScale: 1, imageSeconds: [0.3, 0.3] });
    const ws = workspace(t.sim, imageManifest(10), {}, 1);
    const res = await ws.run();
    expect(res.code, res.stdout).toBe(0);
    expect(commits[0]!.ids).toHaveLength(10);
    const posts = t.sim.service.ledger.of('request').filter((r) => r.method === 'POST' && r.path === '/images');
    expect(posts).toHaveLength(10);
    for (const post of posts) expect(post.at).toBeGreaterThanOrEqual(commits[0]!.at);
  });
});
