import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALLOWED_CHANGES } from '../../src/store/machine/moves.js';
import { Store, type ItemState } from '../../src/store/index.js';

/**
 * The machine's table drives this: random sequences of moves on a small
 * manifest (a draft gating a final gating a video, and a plain item with an
 * edit made from it), decisions of every kind, redos, retries, resyncs and
 * restarts (the store closed and opened again between moves), and stale
 * tasks that try moves the item has already left. After every step, each
 * item's change of state is one the table allows; at every send, what leaves
 * queued has every gate made and approved.
 */

const IDS = ['draft', 'final', 'spin', 'plain', 'edit'] as const;
type Id = (typeof IDS)[number];
const GATES: Record<Id, Id[]> = { draft: [], final: ['draft'], spin: ['final'], plain: [], edit: [] };
const DEPS: Record<Id, Id[]> = { draft: [], final: ['draft'], spin: ['final'], plain: [], edit: ['plain'] };

type Step =
  | { kind: 'advance'; id: Id; choice: number }
  | { kind: 'make'; id: Id; until: 'queued' | 'done' }
  | { kind: 'let-go' }
  | { kind: 'stale'; id: Id; choice: number }
  | { kind: 'decide'; id: Id; decision: 'approved' | 'rejected' | null; byTimeout: boolean }
  | { kind: 'check'; id: Id }
  | { kind: 'redo-rejected'; id: Id }
  | { kind: 'retry'; id: Id }
  | { kind: 'resync'; changed: Id | undefined }
  | { kind: 'restart' };

const id = fc.constantFrom(...IDS);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('advance' as const), id, choice: fc.nat(99) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('stale' as const), id, choice: fc.nat(99) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('make' as const),
      id,
      until: fc.constantFrom('queued' as const, 'done' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('decide' as const),
      id: fc.constantFrom<Id>('draft', 'final'),
      decision: fc.constantFrom('approved' as const, 'rejected' as const, null),
      byTimeout: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('check' as const), id }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('redo-rejected' as const), id }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('retry' as const), id }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('resync' as const), changed: fc.option(id, { nil: undefined }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'let-go' as const }) },
);

/** The `advance` choice that takes an item in each state forward: sent, accepted, completed, saved. */
const FORWARD: Partial<Record<ItemState, number>> = { submitting: 0, running: 0 };

class Model {
  store: Store;
  now = 1;
  /** Each item's content, changed by a resync. */
  readonly content = new Map<Id, number>(IDS.map((i) => [i, 0]));
  /** Each item's versions made so far. */
  readonly versions = new Map<Id, number>(IDS.map((i) => [i, 0]));
  readonly violations: string[] = [];
  /** Every change of state seen, as `from>to`. */
  readonly seen = new Set<string>();
  constructor(private readonly path: string) {
    this.store = this.open();
    this.sync(false);
    this.observe('the first sync');
  }

  /**
   * The store, with this test's own temporary triggers on its connection: each write of an item's state, one row
   * each, however many a statement makes (a sync's inserts and settling, a decision's set-based moves).
   */
  open(): Store {
    const store = Store.open(this.path);
    store.db.exec(`
      CREATE TEMP TABLE moves (seq INTEGER PRIMARY KEY, id TEXT, was TEXT, is_now TEXT);
      CREATE TEMP TRIGGER moved AFTER UPDATE OF state ON main.items WHEN old.state IS NOT new.state
      BEGIN INSERT INTO moves (id, was, is_now) VALUES (new.id, old.state, new.state); END;
      CREATE TEMP TRIGGER added AFTER INSERT ON main.items
      BEGIN INSERT INTO moves (id, was, is_now) VALUES (new.id, '', new.state); END;`);
    return store;
  }

  /** Each change of state written since the last look, held to the table. */
  observe(after: string): void {
    const moves = this.store.db
      .prepare<[], { id: string; was: string; is_now: string }>('DELETE FROM moves RETURNING id, was, is_now')
      .all();
    for (const { id, was, is_now } of moves) {
      const change = `${was}>${is_now}`;
      this.seen.add(change);
      if (!ALLOWED_CHANGES.has(change))
        this.violations.push(`${id}: ${change} after ${after}, which the table does not allow`);
    }
  }

  sync(redoChanged: boolean): void {
    const items = IDS.map((i, seq) => ({
      id: i,
      seq,
      type: (i === 'spin' ? 'video' : 'image') as 'image' | 'video',
      model: 'm',
      contentHash: `h-${i}-${this.content.get(i)}`,
      spec: '{}',
      dependsOn: DEPS[i],
      gates: GATES[i],
    }));
    this.store.itemSync.sync(items, this.tick(), redoChanged);
  }

  tick(): number {
    return ++this.now;
  }

  /** Each gate of `item`, read now: made (done) and its current version's decision. */
  gatesOf(item: Id): { made: boolean; review: string }[] {
    return GATES[item]
      .map(
        (gate) =>
          this.store.db
            .prepare<[string], { made: number; review: string }>(
              "SELECT state = 'done' AS made, review FROM items WHERE id = ?",
            )
            .get(gate)!,
      )
      .map((g) => ({ made: g.made === 1, review: g.review }));
  }

  /** Whether every gate of `item` has its current version made and approved, read now. */
  gatesApproved(item: Id): boolean {
    return this.gatesOf(item).every((g) => g.made && g.review === 'approved');
  }

  /**
   * Every gated item not sent is where its gates put it, whatever moved last: let go (pending, queued) only while
   * every gate is made and approved, waiting while one is not and none is rejected, skipped by its gate while one is.
   */
  settled(after: string): void {
    for (const item of IDS) {
      if (GATES[item].length === 0) continue;
      const row = this.store.items.get(item)!;
      const gates = this.gatesOf(item);
      const rejected = gates.some((g) => g.made && g.review === 'rejected');
      const open = gates.some((g) => !(g.made && g.review === 'approved'));
      const wrong =
        ((row.state === 'pending' || row.state === 'queued') && (rejected || open)) ||
        (row.state === 'waiting' && (rejected || !open)) ||
        (row.state === 'skipped' && row.error_code === 'GATE_REJECTED' && !rejected);
      if (wrong)
        this.violations.push(
          `${item} is ${row.state} (${row.error_code}) with its gates ${JSON.stringify(gates)} after ${after}`,
        );
    }
  }

  attemptOf(item: Id): number {
    return this.store.items.get(item)!.attempt;
  }

  /** Sends as a submission task does, and holds the send to its guard. */
  send(item: Id, was: ItemState): void {
    const n = this.attemptOf(item);
    if (n === 0) return;
    const approved = this.gatesApproved(item);
    const sent = this.store.lifecycle.recordSent(item, n, this.tick(), 'fp');
    if (sent && was === 'queued' && !approved) this.violations.push(`${item} sent while a gate was not approved`);
  }

  /** The next move of the item's life, as the runner would make it, one of several where the service may answer so. */
  advance(item: Id, choice: number): void {
    const { lifecycle, outputFiles } = this.store;
    const state = this.store.items.get(item)!.state;
    const n = this.attemptOf(item);
    const now = this.tick();
    const job = `job-${item}-${n}`;
    switch (state) {
      case 'pending':
        if (choice < 10) lifecycle.uploadFailed(item, now, now + 1);
        else if (choice < 15) lifecycle.crashed(item, 'pending', { code: 'X', message: 'x' }, now);
        else lifecycle.startAttempt(item, n + 1, `k-${item}-${n + 1}`, '{}', now, 'fp');
        return;
      case 'queued':
        if (choice < 10) lifecycle.requeue(item, now);
        else if (choice < 15) lifecycle.recordRefused(item, n, { code: 'INVALID', message: 'no' }, 'failed', now);
        else this.send(item, state);
        return;
      case 'submitting':
        if (choice < 50) lifecycle.recordAccepted(item, n, job, 2, 0, now);
        else if (choice < 60) lifecycle.deferResend(item, n, now + 1, now);
        else if (choice < 70) lifecycle.recordMaybeAccepted(item, n, { code: 'NO_ANSWER', message: 'x' }, now);
        else if (choice < 78) lifecycle.recordRefused(item, n, { code: 'RATE', message: 'x' }, 'pending', now);
        else if (choice < 84) lifecycle.recordRefused(item, n, { code: 'BLOCKED', message: 'x' }, 'blocked', now);
        else if (choice < 90) lifecycle.recordConflict(item, n, { code: 'KEY_REUSED', message: 'x' }, now);
        else this.send(item, state);
        return;
      case 'maybe_accepted':
        this.send(item, state);
        return;
      case 'running': {
        const status = choice < 70 ? 'completed' : choice < 85 ? 'failed' : 'expired';
        lifecycle.recordEnded(
          item,
          n,
          { jobId: job, status, refunded: status === 'completed' ? 0 : 2, refundDay: 0 },
          now,
        );
        if (status !== 'completed') {
          if (choice < 93) lifecycle.requeue(item, now);
          else lifecycle.endWithoutOutput(item, 'failed', { code: 'JOB_FAILED', message: 'x' }, now);
        }
        return;
      }
      case 'downloading': {
        if (choice < 15) {
          lifecycle.downloadFailed(item, { code: 'DOWNLOAD', message: 'x' }, now);
          return;
        }
        const version = (this.versions.get(item) ?? 0) + 1;
        const path = `${item}-v${version}.png`;
        outputFiles.claimPath(job, 1, item, path, version, now);
        const file = { path, bytes: 10, sha256: 'ab'.repeat(32), contentType: 'image/png', mtimeMs: now };
        if (lifecycle.outputSaved(item, job, 1, file, now, true)) this.versions.set(item, version);
        return;
      }
      case 'done':
        if (choice < 10) lifecycle.outputMissing(item, job, 1, now);
        return;
      default:
        // waiting, failed, rejected, blocked, skipped: the run has nothing to do with them; the feed skips the doomed.
        lifecycle.skipDoomed(now);
    }
  }

  /** A task that read the item a while ago tries its move now: the machine refuses what the table does not allow. */
  stale(item: Id, choice: number): void {
    const { lifecycle } = this.store;
    const n = Math.max(1, this.attemptOf(item));
    const now = this.tick();
    const was = this.store.items.get(item)!.state;
    const moves = [
      () => this.send(item, was),
      () => lifecycle.recordAccepted(item, n, `job-${item}-${n}`, 2, 0, now),
      () =>
        lifecycle.recordEnded(
          item,
          n,
          { jobId: `job-${item}-${n}`, status: 'completed', refunded: 0, refundDay: 0 },
          now,
        ),
      () => lifecycle.downloaded(item, now),
      () => lifecycle.requeue(item, now),
      () => lifecycle.markSkipped(item, { code: 'DEPENDENCY_FAILED', message: 'x' }, now),
      () => lifecycle.endWithoutOutput(item, 'failed', { code: 'X', message: 'x' }, now),
      () => lifecycle.startAttempt(item, n + 1, `k-${item}-${n + 1}`, '{}', now, 'fp'),
    ];
    moves[choice % moves.length]!();
  }

  apply(s: Step): void {
    const now = this.tick();
    switch (s.kind) {
      case 'advance':
        this.advance(s.id, s.choice);
        return;
      case 'stale':
        this.stale(s.id, s.choice);
        return;
      case 'make':
        // The answers that take it forward, until it is queued or done, or can go no further (a gate, a final state).
        for (let i = 0; i < 6 && this.store.items.get(s.id)!.state !== s.until; i++) {
          this.advance(s.id, FORWARD[this.store.items.get(s.id)!.state] ?? 99);
          this.observe(`a move of ${JSON.stringify(s)}`);
        }
        return;
      case 'let-go':
        // The draft made and approved, the final's attempt queued: what a decision may still take back.
        this.apply({ kind: 'make', id: 'draft', until: 'done' });
        this.apply({ kind: 'decide', id: 'draft', decision: 'approved', byTimeout: false });
        this.observe('the draft made and approved');
        this.apply({ kind: 'make', id: 'final', until: 'queued' });
        return;
      case 'decide': {
        const version = this.versions.get(s.id) ?? 0;
        if (version === 0) return;
        if (s.byTimeout && s.decision)
          this.store.decisions.decideByTimeout(s.id, version, s.decision, 'timed out', now);
        else this.store.decisions.decide({ itemId: s.id, version, decision: s.decision, by: 'ana', now });
        return;
      }
      case 'check': {
        const version = this.versions.get(s.id) ?? 0;
        if (version > 0) this.store.decisions.rejectByCheck(s.id, version, 'too small', now);
        return;
      }
      case 'redo-rejected':
        this.store.items.putBackRejected([s.id], now);
        return;
      case 'retry':
        this.store.items.putBack({ ids: [s.id], now });
        return;
      case 'resync':
        if (s.changed) this.content.set(s.changed, (this.content.get(s.changed) ?? 0) + 1);
        this.sync(true);
        return;
      case 'restart':
        this.observe('the moves before the restart');
        this.store.close();
        this.store = this.open();
        this.sync(false);
        return;
    }
  }
}

describe("the machine's table holds every item's life", () => {
  it('random moves, decisions, redos, retries, resyncs and restarts: every change is one the table allows, every gated item not sent is where its gates put it, and none leaves queued while a gate is not approved', () => {
    const dir = mkdtempSync(join(tmpdir(), 'genbatch-machine-'));
    // One state made by the migrations, copied for each sequence: a sequence pays for its moves, not for the schema.
    const template = join(dir, 'template.sqlite');
    Store.open(template).close();
    let run = 0;
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.array(step, { minLength: 10, maxLength: 60, size: 'max' }), (steps) => {
        const path = join(dir, `s${run++}.sqlite`);
        copyFileSync(template, path);
        const model = new Model(path);
        try {
          for (const s of steps) {
            model.apply(s);
            model.observe(JSON.stringify(s));
            model.settled(JSON.stringify(s));
          }
          for (const change of model.seen) seen.add(change);
          expect(model.violations).toEqual([]);
        } finally {
          model.store.close();
        }
      }),
      { numRuns: 60, seed: Number(process.env.MACHINE_SEED ?? 77) },
    );
    // The sequences reach the gates' moves and the machine's far corners, not only the happy path.
    for (const change of [
      'waiting>pending',
      'queued>skipped',
      'pending>waiting',
      'skipped>pending',
      'done>pending',
      'done>downloading',
    ])
      expect(seen, `no sequence made ${change}`).toContain(change);
  });
});
