import type { Db } from './db.js';

/** What a person decided of one version of an item's outputs. */
export type ReviewDecision = 'approved' | 'rejected';

export interface ReviewRow {
  item_id: string;
  version: number;
  decision: ReviewDecision;
  note: string | null;
  decided_at: number;
  /** A person's decision, the manifest's checks' (their reason in `note`), or a gate's approval timeout's. */
  by: 'person' | 'check' | 'timeout';
}

export interface ReviewCounts {
  approved: number;
  rejected: number;
  /** Done items whose current version has no decision yet. */
  unreviewed: number;
  /** Of the rejected, those the manifest's checks rejected (no person has decided since). */
  rejectedByChecks: number;
}

/** Joins a review to the item's current version: the one whose outputs are not superseded. */
const CURRENT =
  'JOIN outputs o ON o.item_id = r.item_id AND o.version = r.version AND o.idx = 1 AND o.superseded_at IS NULL';

/**
 * Review decisions: one per (item, version), each version's current one
 * (decisions.ts keeps every one ever taken, and is the only writer of these:
 * it moves what a decision gates with it). A decision is taken only on a
 * version whose outputs are on disk, verified; clearing it (undo) returns the
 * version to unreviewed.
 */
export class Reviews {
  private readonly checkStmt;
  private readonly timeoutStmt;
  private readonly ofItemStmt;
  private readonly countsStmt;
  private readonly rejectedStmt;
  private readonly currentStmt;
  private readonly noteStmt;
  private readonly bulkStmt;
  private readonly bulkKeepingNotesStmt;
  private readonly bulkClearStmt;

  constructor(db: Db) {
    // Many decisions of one kind in one statement (a JSON array of [itemId, version]): each row's triggers still run,
    // but not a statement from JavaScript for each (a bulk decision of 10,000 cards).
    const bulk = (note: string) =>
      db.prepare<{ rows: string; decision: string; note: string | null; now: number }>(
        `INSERT INTO reviews (item_id, version, decision, note, decided_at)
         SELECT value ->> 0, value ->> 1, @decision, @note, @now FROM json_each(@rows) WHERE true
         ON CONFLICT (item_id, version) DO UPDATE SET decision = excluded.decision, note = ${note},
           decided_at = excluded.decided_at, by = 'person'`,
      );
    this.bulkStmt = bulk('excluded.note');
    this.bulkKeepingNotesStmt = bulk('reviews.note');
    this.bulkClearStmt = db.prepare<[string]>(
      'DELETE FROM reviews WHERE (item_id, version) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))',
    );
    // A check never overrides a decision already there (a person's, or an earlier check's).
    this.checkStmt = db.prepare(
      `INSERT INTO reviews (item_id, version, decision, note, decided_at, by)
       SELECT @itemId, @version, 'rejected', @note, @now, 'check'
       WHERE EXISTS (SELECT 1 FROM outputs WHERE item_id = @itemId AND version = @version AND sha256 IS NOT NULL)
       ON CONFLICT (item_id, version) DO NOTHING`,
    );
    // A gate's approval timeout never overrides a decision already there either.
    this.timeoutStmt = db.prepare(
      `INSERT INTO reviews (item_id, version, decision, note, decided_at, by)
       SELECT @itemId, @version, @decision, @note, @now, 'timeout'
       WHERE EXISTS (SELECT 1 FROM outputs WHERE item_id = @itemId AND version = @version AND sha256 IS NOT NULL)
       ON CONFLICT (item_id, version) DO NOTHING`,
    );
    this.ofItemStmt = db.prepare<[string], ReviewRow>('SELECT * FROM reviews WHERE item_id = ? ORDER BY version');
    // From the items' review (kept by triggers) in its index, and the few decisions the checks took: no join of every
    // decision with its output (22 ms at 100,000 items, paid by every refresh of the review app's header).
    this.countsStmt = db.prepare<[], { approved: number; rejected: number; unreviewed: number; byChecks: number }>(
      `SELECT (SELECT count(*) FROM items WHERE removed IN (0, 1) AND review = 'approved') AS approved,
              (SELECT count(*) FROM items WHERE removed IN (0, 1) AND review = 'rejected') AS rejected,
              (SELECT count(*) FROM items WHERE removed IN (0, 1) AND review = 'unreviewed') AS unreviewed,
              (SELECT count(*) FROM reviews r ${CURRENT} AND o.sha256 IS NOT NULL
               WHERE r.by = 'check' AND r.decision = 'rejected') AS byChecks`,
    );
    this.currentStmt = db.prepare<[string], { version: number; outputs: number; verified: number }>(
      `SELECT version, count(*) AS outputs, count(sha256) AS verified FROM outputs
       WHERE item_id = ? AND superseded_at IS NULL GROUP BY version ORDER BY version DESC LIMIT 1`,
    );
    this.noteStmt = db
      .prepare<[string, number], string | null>('SELECT note FROM reviews WHERE item_id = ? AND version = ?')
      .pluck();
    this.rejectedStmt = db
      .prepare<[], string>(
        `SELECT r.item_id FROM reviews r ${CURRENT} JOIN items i ON i.id = r.item_id
         WHERE r.decision = 'rejected' AND i.state = 'done' AND i.removed = 0 ORDER BY i.seq`,
      )
      .pluck();
  }

  /** The item's current version (its outputs not superseded): how many outputs it has, and how many are verified. */
  current(itemId: string): { version: number; outputs: number; verified: number } | undefined {
    return this.currentStmt.get(itemId);
  }

  /**
   * One decision (or clearing, `null`) on many versions, each already asked whether it may be decided: written in one
   * statement, and nothing of what they gate moved (the caller settles them once; see Decisions.decideAll). A note
   * left undefined keeps each version's own.
   */
  decideMany(
    rows: readonly (readonly [itemId: string, version: number])[],
    decision: ReviewDecision | null,
    note: string | null | undefined,
    now: number,
  ): void {
    const json = JSON.stringify(rows);
    if (decision === null) this.bulkClearStmt.run(json);
    else
      (note === undefined ? this.bulkKeepingNotesStmt : this.bulkStmt).run({
        rows: json,
        decision,
        note: note ?? null,
        now,
      });
  }

  /**
   * A gate's approval timeout decides its version (`note` says so), unless a decision is there already: true when
   * taken. Nothing it gates moves here: Decisions.decideByTimeout moves it.
   */
  decideByTimeout(itemId: string, version: number, decision: ReviewDecision, note: string, now: number): boolean {
    return this.timeoutStmt.run({ itemId, version, decision, note, now }).changes === 1;
  }

  /**
   * The manifest's checks reject a version (`reason` says why), unless a decision is there already: true when taken.
   * Nothing it gates moves here: Decisions.rejectByCheck moves it.
   */
  rejectByCheck(itemId: string, version: number, reason: string, now: number): boolean {
    return this.checkStmt.run({ itemId, version, note: reason, now }).changes === 1;
  }

  /** The note kept with a version's decision, if it has one. */
  noteOf(itemId: string, version: number): string | null | undefined {
    return this.noteStmt.get(itemId, version);
  }

  ofItem(itemId: string): ReviewRow[] {
    return this.ofItemStmt.all(itemId);
  }

  /** Decisions on current versions, and the outputs with none yet (an item not made, or waiting, is not counted). */
  counts(): ReviewCounts {
    const { approved, rejected, unreviewed, byChecks } = this.countsStmt.get()!;
    return { approved, rejected, unreviewed, rejectedByChecks: byChecks };
  }

  /** Done items whose current version was rejected: what --redo-rejected regenerates, in manifest order. */
  rejectedCurrent(): string[] {
    return this.rejectedStmt.all();
  }
}
