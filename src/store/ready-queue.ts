import type { Db } from './db.js';
import { ITEM_STATES, type ItemState } from './machine/states.js';
import type { Statement } from 'better-sqlite3';
import type { ItemRow } from './items.js';

/** An item as a download takes it: what names its outputs, and its state. */
export type DownloadingItem = Pick<ItemRow, 'id' | 'type' | 'model' | 'state'>;

/**
 * A gate of item `i` not approved: not done, or its current version not approved. The ready query asks it too,
 * though such an item is waiting, not pending: nothing gated is ever sent unapproved, whatever moved it.
 */
const unapprovedGate = (item: string) =>
  `SELECT 1 FROM gates g JOIN items gi ON gi.id = g.gate_id WHERE g.item_id = ${item} AND (gi.state IS NOT 'done' OR gi.review IS NOT 'approved')`;

/** What a run takes up next: ready items in their order (priority, then manifest order; a --only selection), due resends, downloads to resume, and items that can never run. */
export class ReadyQueue {
  private readonly canaryStmt;
  private readonly waitsStmt;
  private readonly readyStmt;
  private readonly dueResendsStmt;
  private readonly boundToStmt;
  private readonly nextDueStmt;
  private readonly onRejectedStmt;
  private readonly hasDependentsStmt;
  private readonly inStatesStmt;
  private readonly downloadsStmt;
  private readonly doneOutputsStmt;
  /** The ready query of a run --only, and its counts: set by `select`. */
  private readySelected: typeof this.readyStmt | undefined;
  /** The ready query as it stands: with a --only selection, and without the items of spent tags. */
  private readyNow: typeof this.readyStmt | undefined;
  private excluding = false;
  private selectedCountsStmt: Statement<[], { state: ItemState; n: number }> | undefined;

  constructor(private readonly db: Db) {
    // Each pending item with what it still waits for: the ids not done, and how many of them can no longer be made.
    this.canaryStmt = db.prepare<
      [],
      { id: string; type: 'image' | 'video'; model: string; waits: string | null; stuck: number }
    >(
      `SELECT i.id, i.type, i.model,
         (SELECT json_group_array(d.dep_id) FROM deps d JOIN items di ON di.id = d.dep_id WHERE d.item_id = i.id AND di.state <> 'done') AS waits,
         (SELECT count(*) FROM deps d LEFT JOIN items di ON di.id = d.dep_id WHERE d.item_id = i.id AND (di.state IS NULL OR di.state NOT IN ('done', 'pending'))) AS stuck
       FROM items i WHERE state = 'pending' AND removed = 0 ORDER BY seq`,
    );
    this.waitsStmt = db.prepare<[{ id: string }], { one: number }>(
      `SELECT 1 AS one FROM deps d LEFT JOIN items di ON di.id = d.dep_id WHERE d.item_id = @id AND (di.state IS NULL OR di.state <> 'done' OR di.review IS 'rejected')
       UNION ALL ${unapprovedGate('@id')} LIMIT 1`,
    );
    // Ready: pending, due, and every dependency done, its current version not rejected (a rejected output is never an
    // input: the item waits for its next version); higher priority first, then in manifest order. Keyset-paged by
    // (rank, seq), rank being -priority: one seek in items_ready past the items a run holds. A gated item whose gates
    // are not all approved is not pending but waiting (migration 26).
    this.readyStmt = db.prepare<[{ type: string; now: number; rank: number; seq: number; limit: number }], ItemRow>(
      `SELECT * FROM items i WHERE state = 'pending' AND type = @type AND (rank, seq) > (@rank, @seq) AND not_before <= @now AND removed = 0
         AND NOT EXISTS (SELECT 1 FROM deps d LEFT JOIN items di ON di.id = d.dep_id WHERE d.item_id = i.id AND (di.state IS NULL OR di.state <> 'done' OR di.review IS 'rejected'))
         AND NOT EXISTS (${unapprovedGate('i.id')})
       ORDER BY rank, seq LIMIT @limit`,
    );
    // Deferred resends: submitting with a time set (a held "maybe accepted" attempt has none: it waits for a later run).
    // With the key of the attempt (its resends go with that key alone).
    this.dueResendsStmt = db.prepare<[string, number, number], ItemRow & { key_fp: string | null }>(
      `SELECT i.*, a.key_fp AS key_fp FROM items i LEFT JOIN attempts a ON a.item_id = i.id AND a.n = i.attempt
       WHERE i.state = 'submitting' AND i.type = ? AND i.not_before > 0 AND i.not_before <= ? ORDER BY i.seq LIMIT ?`,
    );
    this.boundToStmt = db.prepare<[string], ItemRow>(
      `SELECT i.* FROM items i JOIN attempts a ON a.item_id = i.id AND a.n = i.attempt WHERE i.state IN ('queued', 'submitting') AND a.key_fp = ? ORDER BY i.seq`,
    );
    // Due or not yet: an item that came due since the feeder last looked must not be taken for "nothing left".
    this.nextDueStmt = db.prepare<[{ type: string }], { at: number | null }>(
      // One seek per state in items_due (an IN over both states would scan).
      `SELECT min(at) AS at FROM (SELECT min(not_before) AS at FROM items WHERE state = 'pending' AND type = @type AND not_before > 0
         UNION ALL SELECT min(not_before) FROM items WHERE state = 'submitting' AND type = @type AND not_before > 0)`,
    );
    // Pending items an input of which is made and rejected in review: they wait for its next version.
    this.onRejectedStmt = db.prepare<[], { id: string; input: string }>(
      `SELECT i.id, d.dep_id AS input FROM deps d CROSS JOIN items di ON di.id = d.dep_id CROSS JOIN items i ON i.id = d.item_id
       WHERE di.state = 'done' AND di.review = 'rejected' AND i.state = 'pending' AND i.removed = 0 ORDER BY i.seq`,
    );
    this.hasDependentsStmt = db.prepare<[string], { one: number }>(
      'SELECT 1 AS one FROM deps WHERE dep_id = ? LIMIT 1',
    );
    this.inStatesStmt = db.prepare<[string], ItemRow>('SELECT * FROM items WHERE state = ? ORDER BY seq');
    // The item's few columns, not its spec: a restart may find thousands downloading, each held until its turn.
    this.downloadsStmt = db.prepare<[], DownloadingItem & { job_id: string; key_fp: string | null }>(
      `SELECT i.id, i.type, i.model, i.state, a.job_id AS job_id, a.key_fp AS key_fp FROM items i JOIN attempts a ON a.item_id = i.id AND a.n = i.attempt
       WHERE i.state = 'downloading' AND a.job_id IS NOT NULL ORDER BY i.seq`,
    );
    this.doneOutputsStmt = db.prepare<[], import('./output-files.js').OutputRow>(
      `SELECT o.* FROM items i JOIN attempts a ON a.item_id = i.id AND a.n = i.attempt JOIN outputs o ON o.job_id = a.job_id
       WHERE i.state = 'done' ORDER BY i.seq, o.idx`,
    );
  }

  /** Ready items of a type, highest priority first, then in manifest order, after the item `after` in that order. */
  ready(
    type: 'image' | 'video',
    now: number,
    after: { rank: number; seq: number } | undefined,
    limit: number,
  ): ItemRow[] {
    return (this.readyNow ?? this.readySelected ?? this.readyStmt).all({
      type,
      now,
      rank: after?.rank ?? Number.MIN_SAFE_INTEGER,
      seq: after?.seq ?? -1,
      limit,
    });
  }

  /**
   * From now on `ready` hands out only the items whose id `chosen` accepts,
   * and the items they wait for (they cannot run without them), as `run
   * --only` asks; returns the ids selected. Kept in a temporary table: a
   * selection of any size costs the ready query one lookup.
   */
  select(chosen: (id: string, tags: readonly string[]) => boolean): string[] {
    const rows = this.db
      .prepare("SELECT id, spec -> '$.tags' AS tags FROM items WHERE removed = 0 ORDER BY seq")
      .all() as { id: string; tags: string | null }[];
    const ids = rows.filter((r) => chosen(r.id, r.tags ? (JSON.parse(r.tags) as string[]) : [])).map((r) => r.id);
    this.db.exec('CREATE TEMP TABLE IF NOT EXISTS selected_ids (id TEXT PRIMARY KEY)');
    const add = this.db.prepare('INSERT OR IGNORE INTO selected_ids (id) VALUES (?)');
    this.db.transaction(() => {
      this.db.exec('DELETE FROM selected_ids');
      for (const id of ids) add.run(id);
      // What the chosen items wait for, and what that waits for in turn.
      this.db.exec(
        'WITH RECURSIVE need(id) AS (SELECT id FROM selected_ids UNION SELECT d.dep_id FROM deps d JOIN need ON need.id = d.item_id) INSERT OR IGNORE INTO selected_ids SELECT id FROM need',
      );
    })();
    this.readySelected = this.db.prepare(
      this.readyStmt.source.replace('AND removed = 0', 'AND removed = 0 AND id IN (SELECT id FROM selected_ids)'),
    );
    this.readyNow = this.excluding ? this.withoutSpentTags(this.readySelected) : undefined;
    this.selectedCountsStmt = this.db.prepare<[], { state: ItemState; n: number }>(
      'SELECT state, count(*) AS n FROM items WHERE id IN (SELECT id FROM selected_ids) GROUP BY state',
    );
    return this.db.prepare('SELECT id FROM selected_ids').pluck().all() as string[];
  }

  /** The items not selected (see `select`) that are still to be sent: pending, or queued and never sent. */
  unselectedUnsent(): ItemRow[] {
    if (!this.selectedCountsStmt) return [];
    return this.db
      .prepare<[], ItemRow>(
        "SELECT * FROM items WHERE state IN ('pending', 'queued') AND removed = 0 AND id NOT IN (SELECT id FROM selected_ids) ORDER BY seq",
      )
      .all();
  }

  /** The selected items (see `select`), or undefined when the run works on every item. */
  selectedIds(): Set<string> | undefined {
    if (!this.selectedCountsStmt) return undefined;
    return new Set(this.db.prepare<[], string>('SELECT id FROM selected_ids').pluck().all());
  }

  /** The selected items by state (see `select`), or undefined when the run works on every item. */
  selectedCounts(): Record<ItemState, number> | undefined {
    if (!this.selectedCountsStmt) return undefined;
    const out = Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>;
    for (const { state, n } of this.selectedCountsStmt.all()) out[state] = n;
    return out;
  }

  /** Items waiting to be sent, or resent, whose attempt belongs to the key `keyFp`. */
  boundTo(keyFp: string): ItemRow[] {
    return this.boundToStmt.all(keyFp);
  }

  /** Attempts of a type whose deferred resend is due, in manifest order: they go before new items. */
  dueResends(type: 'image' | 'video', now: number, limit: number): (ItemRow & { key_fp: string | null })[] {
    return this.dueResendsStmt.all(type, now, limit);
  }

  /** When the earliest item of a type that waits for its time (a backoff) is due (maybe already), if any does. */
  nextDue(type: 'image' | 'video'): number | undefined {
    return this.nextDueStmt.get({ type })?.at ?? undefined;
  }

  /** Whether any item depends on this one (its end may make them ready). */
  hasDependents(id: string): boolean {
    return this.hasDependentsStmt.get(id) !== undefined;
  }

  /** Pending items that wait for the next version of an input rejected in review (each with that input). */
  waitingOnRejected(): { id: string; input: string }[] {
    return this.onRejectedStmt.all();
  }

  inState(state: ItemState): ItemRow[] {
    return this.inStatesStmt.all(state);
  }

  /** Items whose job completed and whose outputs are not all on disk: each with its job and the key of its attempt (one query, not two per item). */
  downloadsToResume(): { item: DownloadingItem; job_id: string; key_fp: string | null }[] {
    return this.downloadsStmt.all().map(({ job_id, key_fp, ...item }) => ({ item, job_id, key_fp }));
  }

  /** The outputs of every done item's job (the latest attempt's), to check on disk. */
  doneOutputs(): import('./output-files.js').OutputRow[] {
    return this.doneOutputsStmt.all();
  }

  /**
   * Items a canary may take: pending and in the manifest, in manifest order, each with the items it still waits
   * for (pending ones, made first); an item waiting for one that can no longer be made is left out.
   */
  canaryCandidates(): { id: string; type: 'image' | 'video'; model: string; waitsFor: string[] }[] {
    return this.canaryStmt
      .all()
      .filter((row) => row.stuck === 0)
      .map(({ id, type, model, waits }) => ({
        id,
        type,
        model,
        waitsFor: waits ? (JSON.parse(waits) as string[]) : [],
      }));
  }

  /** Whether the item waits for another that is not done yet. */
  waitsForAny(id: string): boolean {
    return this.waitsStmt.get({ id }) !== undefined;
  }

  /**
   * From now on `ready` hands out no item with one of these tags (their
   * budgets are spent): they stay pending, for a run with a larger budget.
   * Kept in a temporary table the ready query looks each candidate's tags up in.
   */
  excludeTags(tags: readonly string[]): void {
    this.db.exec('CREATE TEMP TABLE IF NOT EXISTS spent_tags (tag TEXT PRIMARY KEY)');
    const add = this.db.prepare('INSERT OR IGNORE INTO spent_tags (tag) VALUES (?)');
    for (const tag of tags) add.run(tag);
    if (this.excluding) return;
    this.excluding = true;
    this.readyNow = this.withoutSpentTags(this.readySelected ?? this.readyStmt);
  }

  private withoutSpentTags(ready: typeof this.readyStmt): typeof this.readyStmt {
    return this.db.prepare(
      ready.source.replace(
        'AND removed = 0',
        "AND removed = 0 AND NOT EXISTS (SELECT 1 FROM json_each(i.spec, '$.tags') j JOIN spent_tags s ON s.tag = j.value)",
      ),
    );
  }

  /** Pending items that carry one of these tags: what a spent tag left unsent. */
  pendingWithTags(tags: readonly string[]): number {
    if (tags.length === 0) return 0;
    const placeholders = tags.map(() => '?').join(', ');
    return this.db
      .prepare<string[], number>(
        `SELECT count(*) FROM items i WHERE state = 'pending' AND removed = 0 AND i.spec -> '$.tags' IS NOT NULL
           AND EXISTS (SELECT 1 FROM json_each(i.spec, '$.tags') j WHERE j.value IN (${placeholders}))`,
      )
      .pluck()
      .get(...tags) as number;
  }
}
