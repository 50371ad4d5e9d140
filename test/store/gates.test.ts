import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { decide } from '../helpers/decide.js';

let store: Store | undefined;
afterEach(() => store?.close());

/** An item made from `from` (an input), waiting for `gate`'s approval when it has one. */
const item = (id: string, seq: number, from?: string, gate?: string) => ({
  id,
  seq,
  type: 'image' as const,
  model: 'm',
  contentHash: `h-${id}`,
  spec: '{}',
  dependsOn: from ? [from] : [],
  gates: gate ? [gate] : [],
});

/** A draft, a final gated on it, and a video made from the final (gated too). */
function fresh(): Store {
  store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-gates-')), 's.sqlite'));
  store.itemSync.sync(
    [item('draft', 0), item('final', 1, 'draft', 'draft'), item('spin', 2, 'final', 'final')],
    1,
    false,
  );
  return store;
}

/** The item made, its version `version` on disk, verified. */
function made(s: Store, id: string, n: number, version: number, now: number): void {
  s.lifecycle.startAttempt(id, n, `k-${id}-${n}`, '{}', now, 'fp');
  s.lifecycle.recordSent(id, n, now, 'fp');
  s.lifecycle.recordAccepted(id, n, `job-${id}-${n}`, 2, 0, now);
  s.lifecycle.recordEnded(id, n, { jobId: `job-${id}-${n}`, status: 'completed', refunded: 0, refundDay: 0 }, now);
  s.outputFiles.claimPath(`job-${id}-${n}`, 1, id, `${id}-v${version}.png`, version, now);
  const file = {
    path: `${id}-v${version}.png`,
    bytes: 10,
    sha256: 'ab'.repeat(32),
    contentType: 'image/png',
    mtimeMs: now,
  };
  s.lifecycle.outputSaved(id, `job-${id}-${n}`, 1, file, now, true);
}

const states = (s: Store) => ['draft', 'final', 'spin'].map((id) => s.items.get(id)!.state);

describe("a gated item follows its gates' decisions, whichever process wrote them", () => {
  it('waits, is let go by an approval, waits again when it is cleared, is skipped by a rejection, and comes back with a new version', () => {
    const s = fresh();
    // Written by the sync: the gated items wait, nothing of them ready.
    expect(states(s)).toEqual(['pending', 'waiting', 'waiting']);
    made(s, 'draft', 1, 1, 10);
    expect(states(s)).toEqual(['done', 'waiting', 'waiting']);
    expect(s.queue.ready('image', 100, undefined, 10).map((r) => r.id)).toEqual([]);

    decide(s, 'draft', 1, 'approved', null, 11);
    expect(states(s)).toEqual(['done', 'pending', 'waiting']);
    expect(s.queue.ready('image', 100, undefined, 10).map((r) => r.id)).toEqual(['final']);

    // Cleared before the final was sent: it waits again.
    decide(s, 'draft', 1, null, null, 12);
    expect(states(s)).toEqual(['done', 'waiting', 'waiting']);

    decide(s, 'draft', 1, 'rejected', 'off-model', 13);
    expect(s.items.get('final')).toMatchObject({ state: 'skipped', error_code: 'GATE_REJECTED' });
    expect(s.items.get('final')!.error_message).toContain('draft');
    // The video, whose gate can no longer be made, is skipped in turn by the feed; settled, it stays so.
    s.lifecycle.markSkipped('spin', { code: 'DEPENDENCY_FAILED', message: 'final ended skipped' }, 14);
    s.gates.settleAll();
    expect(states(s)).toEqual(['done', 'skipped', 'skipped']);

    // A rejection undone (as review or approve records it): the final is let go, the video comes back to wait for it.
    decide(s, 'draft', 1, 'approved', null, 14);
    expect(states(s)).toEqual(['done', 'pending', 'waiting']);
    decide(s, 'draft', 1, 'rejected', 'off-model', 14);
    s.lifecycle.markSkipped('spin', { code: 'DEPENDENCY_FAILED', message: 'final ended skipped' }, 14);
    expect(states(s)).toEqual(['done', 'skipped', 'skipped']);

    // The draft made again: the final waits for the new version's decision, and the video comes back with it.
    expect(s.items.putBackRejected(['draft'], 15)).toEqual(['draft']);
    s.gates.settleAll();
    expect(states(s)).toEqual(['pending', 'waiting', 'waiting']);
    made(s, 'draft', 2, 2, 16);
    expect(states(s)).toEqual(['done', 'waiting', 'waiting']);
    decide(s, 'draft', 2, 'approved', null, 17);
    expect(states(s)).toEqual(['done', 'pending', 'waiting']);

    // Queued is not sent: a rejection takes the final back, and its saved attempt can no longer leave.
    s.lifecycle.startAttempt('final', 1, 'k-final-1', '{}', 18, 'fp');
    expect(states(s)).toEqual(['done', 'queued', 'waiting']);
    decide(s, 'draft', 2, 'rejected', null, 19);
    expect(states(s)).toEqual(['done', 'skipped', 'waiting']);
    expect(s.lifecycle.recordSent('final', 1, 19, 'fp')).toBe(false);
    // Cleared, it waits; approved, it goes with a new attempt (the first was never sent).
    decide(s, 'draft', 2, null, null, 20);
    expect(states(s)).toEqual(['done', 'waiting', 'waiting']);
    decide(s, 'draft', 2, 'approved', null, 21);
    expect(s.lifecycle.startAttempt('final', 2, 'k-final-2', '{}', 22, 'fp')).toBe(true);
    // An approval keeps a queued item queued.
    decide(s, 'draft', 2, 'approved', 'still good', 22);
    expect(states(s)).toEqual(['done', 'queued', 'waiting']);

    // What was sent is never undone: the final on the wire stays where it is when its gate's decision changes.
    expect(s.lifecycle.recordSent('final', 2, 23, 'fp')).toBe(true);
    decide(s, 'draft', 2, 'rejected', null, 24);
    expect(states(s)).toEqual(['done', 'submitting', 'waiting']);
    expect(s.lifecycle.recordSent('final', 2, 25, 'fp')).toBe(true);

    // The send's own guard: an item left queued while its gate is rejected (as no writer of today leaves one) does
    // not leave; asked in the transaction that would mark it submitting.
    s.db.prepare("UPDATE items SET state = 'queued' WHERE id = 'final'").run();
    expect(s.lifecycle.recordSent('final', 2, 26, 'fp')).toBe(false);
    decide(s, 'draft', 2, 'approved', null, 27);
    expect(s.lifecycle.recordSent('final', 2, 28, 'fp')).toBe(true);
  });
});

describe('the decision record', () => {
  it('names what a bulk decision brought back however far down, under the gate it came from', () => {
    store = Store.open(join(mkdtempSync(join(tmpdir(), 'genbatch-gates-')), 's.sqlite'));
    const s = store;
    // Per product: a draft, a final gated on it, and an edit made from the final (an input, no gate of its own).
    s.itemSync.sync(
      ['a', 'b'].flatMap((p, i) => [
        item(`draft-${p}`, i * 3, undefined),
        item(`final-${p}`, i * 3 + 1, `draft-${p}`, `draft-${p}`),
        item(`edit-${p}`, i * 3 + 2, `final-${p}`),
      ]),
      1,
      false,
    );
    made(s, 'draft-a', 1, 1, 10);
    made(s, 'draft-b', 1, 1, 10);
    for (const p of ['a', 'b']) {
      decide(s, `draft-${p}`, 1, 'rejected', null, 11);
      // The edit, whose input can no longer be made, is skipped in turn by the feed.
      s.lifecycle.markSkipped(`edit-${p}`, { code: 'DEPENDENCY_FAILED', message: `final-${p} ended skipped` }, 12);
    }
    const entries = s.decisions.decideAll(
      ['a', 'b'].map((p) => ({ itemId: `draft-${p}`, version: 1, decision: 'approved', by: 'ana', now: 13 })),
    );
    expect(entries.map((e) => ('refused' in e ? e : [e.itemId, e.unlocked]))).toEqual([
      ['draft-a', ['final-a', 'edit-a']],
      ['draft-b', ['final-b', 'edit-b']],
    ]);
    expect(s.decisions.list(2).map((d) => d.unlocked)).toEqual([
      ['final-b', 'edit-b'],
      ['final-a', 'edit-a'],
    ]);
  });

  it('keeps every decision as written; a state from before it gets its decisions as entries by "unknown"', () => {
    const s = fresh();
    made(s, 'draft', 1, 1, 10);
    const first = s.decisions.decide({
      itemId: 'draft',
      version: 1,
      decision: 'rejected',
      note: 'off',
      by: 'ana',
      now: 11,
    });
    expect(first).toMatchObject({ decision: 'rejected', skipped: ['final'], by: 'ana' });
    expect(s.decisions.decide({ itemId: 'draft', version: 1, decision: 'approved', by: 'ben', now: 12 })).toMatchObject(
      {
        unlocked: ['final'],
        note: 'off',
      },
    );
    expect(s.decisions.decide({ itemId: 'draft', version: 2, decision: 'approved', by: 'ben', now: 13 })).toEqual({
      refused: 'not-made',
      state: 'done',
    });
    expect(s.decisions.list().map((d) => [d.decision, d.by, d.at])).toEqual([
      ['approved', 'ben', 12],
      ['rejected', 'ana', 11],
    ]);
    // Append-only: nothing rewrites or removes an entry.
    expect(() => s.db.exec("UPDATE decisions SET by = 'eve'")).toThrow(/kept as written/);
    expect(() => s.db.exec('DELETE FROM decisions')).toThrow(/kept as written/);

    // As a genbatch before the record left it: its reviews only, at schema 27. Upgraded, each is an entry by "unknown".
    const path = s.db.name;
    // Schema 27 had migration 26's trigger, which 28 replaces: any trigger of that name stands for it here.
    s.db.exec('DROP TABLE decisions; CREATE TRIGGER gate_moved AFTER UPDATE OF state ON items BEGIN SELECT 1; END');
    s.db.pragma('user_version = 27');
    s.close();
    store = Store.open(path);
    expect(store.decisions.list().map((d) => [d.itemId, d.version, d.decision, d.by, d.byTimeout])).toEqual([
      ['draft', 1, 'approved', 'unknown', false],
    ]);
  });
});
