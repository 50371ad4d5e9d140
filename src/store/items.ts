import { withRelaxedSync, type Db } from './db.js';
import type { Lifecycle } from './lifecycle.js';

import { ENDED_WITHOUT_OUTPUT, FINAL_STATES, ITEM_STATES, OPEN_STATES, sqlStates, type ItemState } from './states.js';

export interface ItemRow {
  id: string;
  seq: number;
  type: 'image' | 'video';
  model: string;
  content_hash: string;
  spec: string;
  state: ItemState;
  attempt: number;
  changed: number;
  /** 1 when the manifest no longer has the item. */
  removed: number;
  error_code: string | null;
  error_message: string | null;
  not_before: number;
  updated_at: number;
  /** Ready items go higher first (0 unless the manifest says). */
  priority: number;
  /** -priority: the ready order is (rank, seq). */
  rank: number;
  /** Failed uploads of its inputs so far (the fifth ends it). */
  upload_failures: number;
}

/** An item that ended without an output, or waits for a later run with an error noted. */
export interface ItemProblem {
  id: string;
  state: ItemState;
  code: string;
  message: string;
}

/** An item as the report shows it, with its attempts' and outputs' facts folded in (JSON arrays). */
export type ItemFacts = Pick<ItemRow, 'id' | 'state' | 'type' | 'model' | 'error_code' | 'error_message'> & {
  /** Where the next page starts: the item's place in the manifest, then its rowid (a removed item may share a seq). */
  seq: number;
  row: number;
  prompt: string;
  values_json: string | null;
  tags_json: string | null;
  aspect_ratio: string | null;
  resolution: string | null;
  duration: string | null;
  /** [jobId, …] of its attempts that got one, in order. */
  job_ids: string;
  charged: number;
  refunded: number;
  /** [[path, bytes, sha256], …] of its verified outputs. */
  files: string;
};

/** What the service may echo of an item in its job list. */
export interface ItemEcho {
  id: string;
  model: string;
  prompt: string | null;
}

/** What the report's header needs of all items: a few rows, whatever the state's size. */
export interface ReportTally {
  state: ItemState;
  model: string;
  n: number;
}

export interface ItemSync {
  id: string;
  seq: number;
  type: 'image' | 'video';
  model: string;
  contentHash: string;
  spec: string;
  /** The ids of the items it waits for (their outputs or jobs are its inputs). */
  dependsOn: readonly string[];
  /** Ready items go higher first, then by seq (0 when not given). */
  priority?: number;
}

/** What the catalog judges of an item, without its prompt or id. */
export interface ItemShape {
  type: 'image' | 'video';
  model: string;
  aspectRatio: string | null;
  resolution: string | null;
  duration: string | null;
  edits: number;
  given: 'image' | 'referenceImages' | 'video' | 'source' | null;
  n: number;
}

/** A pending item one of whose dependencies ended without an output. */
export interface DoomedItem {
  id: string;
  dep_id: string;
  dep_state: ItemState;
}

/** Items: the manifest's items as rows with a state, an attempt count and their last error. */
export class Items {
  private readonly byId;
  private readonly insert;
  private readonly setPriority;
  private readonly setSpec;
  /** The ready query of a run --only, and its counts: set by `select`. */
  private readySelected: typeof this.readyStmt | undefined;
  private selectedCountsStmt: import('better-sqlite3').Statement<[], { state: ItemState; n: number }> | undefined;
  private readonly tallyAdded;
  private readonly anyStmt;
  private readonly echoesStmt;
  private readonly canaryStmt;
  private readonly updateUnsent;
  private readonly markChanged;
  private readonly readyStmt;
  private readonly dueResendsStmt;
  private readonly boundToStmt;
  private readonly openByKeyStmt;
  private readonly nextDueStmt;
  private readonly doomedStmt;
  private readonly clearDeps;
  private readonly hasDependentsStmt;
  private readonly insertDep;
  private readonly failuresStmt;
  private readonly putBackCandidatesStmt;
  private readonly latestAttemptStmt;
  private readonly inStatesStmt;
  private readonly countsStmt;
  private readonly deferredStmt;
  private readonly downloadsStmt;
  private readonly doneOutputsStmt;
  private readonly waitsStmt;
  private readonly removedCountsStmt;
  private readonly problemsStmt;
  private readonly endedWithoutOutputStmt;
  private readonly finishedStmt;
  private readonly workStmt;
  private readonly reportStmt;
  private readonly reportTallyStmt;
  private readonly valueNamesStmt;
  private readonly changedStmt;
  private readonly statesStmt;
  private readonly shapesStmt;

  constructor(
    private readonly db: Db,
    /** The item's life: every change of an item's state is one of its guarded transitions. */
    private readonly life: Lifecycle,
  ) {
    this.byId = db.prepare<[string], ItemRow>('SELECT * FROM items WHERE id = ?');
    // No trigger counts an inserted item (migration 11): sync adds what it inserted to the tally, once per type.
    // Positional: binding by name cost a third of the time to insert a 100,000-row catalog.
    this.insert = db.prepare<[string, number, string, string, string, string, number, number, number]>(
      "INSERT INTO items (id, seq, type, model, content_hash, spec, priority, rank, state, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
    );
    this.setPriority = db.prepare('UPDATE items SET priority = @priority, rank = -@priority WHERE id = @id');
    this.setSpec = db.prepare('UPDATE items SET spec = @spec WHERE id = @id');
    this.anyStmt = db.prepare('SELECT 1 FROM items LIMIT 1');
    this.canaryStmt = db.prepare<[], { id: string; type: 'image' | 'video'; model: string }>(
      "SELECT id, type, model FROM items i WHERE state = 'pending' AND removed = 0 AND NOT EXISTS (SELECT 1 FROM deps d WHERE d.item_id = i.id) ORDER BY seq",
    );
    this.echoesStmt = db.prepare<[], ItemEcho>(
      "SELECT id, model, spec ->> '$.prompt' AS prompt FROM items ORDER BY seq",
    );
    this.tallyAdded = db.prepare(
      "INSERT INTO item_tally VALUES (@type, 'pending', 0, @n) ON CONFLICT DO UPDATE SET n = n + @n",
    );
    this.updateUnsent = db.prepare(
      'UPDATE items SET seq = @seq, type = @type, model = @model, content_hash = @contentHash, spec = @spec, changed = 0, updated_at = @now WHERE id = @id',
    );
    this.markChanged = db.prepare('UPDATE items SET seq = @seq, changed = @changed, updated_at = @now WHERE id = @id');
    // Ready: pending, due, and every dependency done; higher priority first, then in manifest order. Keyset-paged by
    // (rank, seq), rank being -priority: one seek in items_ready past the items a run holds.
    this.readyStmt = db.prepare<[{ type: string; now: number; rank: number; seq: number; limit: number }], ItemRow>(
      `SELECT * FROM items i WHERE state = 'pending' AND type = @type AND (rank, seq) > (@rank, @seq) AND not_before <= @now AND removed = 0
         AND NOT EXISTS (SELECT 1 FROM deps d LEFT JOIN items di ON di.id = d.dep_id WHERE d.item_id = i.id AND (di.state IS NULL OR di.state <> 'done'))
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
    this.openByKeyStmt = db.prepare<[], { key_fp: string; n: number }>(
      `SELECT coalesce(a.key_fp, '') AS key_fp, count(*) AS n FROM items i JOIN attempts a ON a.item_id = i.id AND a.n = i.attempt
       WHERE i.state IN ('queued', 'submitting', 'maybe_accepted', 'running', 'downloading') GROUP BY 1 ORDER BY 1`,
    );
    // Due or not yet: an item that came due since the feeder last looked must not be taken for "nothing left".
    this.nextDueStmt = db.prepare<[{ type: string }], { at: number | null }>(
      // One seek per state in items_due (an IN over both states would scan).
      `SELECT min(at) AS at FROM (SELECT min(not_before) AS at FROM items WHERE state = 'pending' AND type = @type AND not_before > 0
         UNION ALL SELECT min(not_before) FROM items WHERE state = 'submitting' AND type = @type AND not_before > 0)`,
    );
    this.doomedStmt = db.prepare<[], DoomedItem>(
      // CROSS JOIN keeps SQLite's join order: from the (few) dependencies, never from the 100,000 pending items (68 ms a call).
      `SELECT i.id AS id, d.dep_id AS dep_id, di.state AS dep_state FROM deps d CROSS JOIN items di ON di.id = d.dep_id CROSS JOIN items i ON i.id = d.item_id
       WHERE di.state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)} AND i.state = 'pending' ORDER BY i.seq`,
    );
    this.clearDeps = db.prepare('DELETE FROM deps');
    this.hasDependentsStmt = db.prepare<[string], { one: number }>(
      'SELECT 1 AS one FROM deps WHERE dep_id = ? LIMIT 1',
    );
    this.insertDep = db.prepare('INSERT OR IGNORE INTO deps (item_id, dep_id) VALUES (?, ?)');
    this.failuresStmt = db.prepare<[], { code: string; n: number }>(
      `SELECT coalesce(error_code, state) AS code, count(*) AS n FROM items WHERE state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)} OR (state IN ${sqlStates(OPEN_STATES)} AND state <> 'pending' AND error_code IS NOT NULL) GROUP BY 1 ORDER BY 2 DESC`,
    );
    this.putBackCandidatesStmt = db.prepare<[], ItemRow>(
      "SELECT * FROM items WHERE state IN ('failed', 'skipped') OR (state = 'downloading' AND error_code IS NOT NULL) ORDER BY seq",
    );
    this.latestAttemptStmt = db.prepare<[string], { status: string; job_id: string | null }>(
      'SELECT status, job_id FROM attempts WHERE item_id = ? ORDER BY n DESC LIMIT 1',
    );
    this.inStatesStmt = db.prepare<[string], ItemRow>('SELECT * FROM items WHERE state = ? ORDER BY seq');
    this.finishedStmt = db.prepare<[number], { n: number; first: number | null; last: number | null }>(
      `SELECT count(*) AS n, min(updated_at) AS first, max(updated_at) AS last FROM items WHERE state IN ${sqlStates(FINAL_STATES)} AND updated_at >= ?`,
    );
    this.workStmt = db.prepare<[], { type: 'image' | 'video'; open: number; pending: number; submitted: number }>(
      `SELECT type, sum(CASE WHEN state IN ${sqlStates(OPEN_STATES)} THEN n ELSE 0 END) AS open, sum(CASE WHEN state = 'pending' THEN n ELSE 0 END) AS pending, sum(attempted * n) AS submitted FROM item_tally GROUP BY type`,
    );
    this.reportStmt = db.prepare<[number, number, number], ItemFacts>(
      `SELECT i.seq, i.rowid AS row, i.id, i.state, i.type, i.model, i.spec ->> '$.prompt' AS prompt, i.spec -> '$.values' AS values_json, i.spec -> '$.tags' AS tags_json,
         i.spec ->> '$.aspectRatio' AS aspect_ratio, i.spec ->> '$.resolution' AS resolution, i.spec ->> '$.duration' AS duration, i.error_code, i.error_message,
         (SELECT json_group_array(job_id) FROM (SELECT job_id FROM attempts WHERE item_id = i.id AND job_id IS NOT NULL ORDER BY n)) AS job_ids,
         (SELECT coalesce(sum(charged), 0) FROM attempts WHERE item_id = i.id) AS charged,
         (SELECT coalesce(sum(refunded), 0) FROM attempts WHERE item_id = i.id) AS refunded,
         (SELECT json_group_array(json_array(path, bytes, sha256)) FROM (SELECT path, bytes, sha256 FROM outputs WHERE item_id = i.id AND path IS NOT NULL AND sha256 IS NOT NULL ORDER BY job_id, idx)) AS files
       FROM items i WHERE (i.seq, i.rowid) > (?, ?) ORDER BY i.seq, i.rowid LIMIT ?`,
    );
    this.reportTallyStmt = db.prepare<[], ReportTally>(
      'SELECT state, model, count(*) AS n FROM items GROUP BY state, model ORDER BY min(seq)',
    );
    // Each item's value names as one string: rows of a catalog mostly share theirs, so the caller sees few distinct ones.
    this.valueNamesStmt = db
      .prepare<[], string | null>(
        "SELECT (SELECT group_concat(key, char(0)) FROM json_each(spec, '$.values')) FROM items ORDER BY seq, rowid",
      )
      .pluck();
    this.statesStmt = db.prepare<[], { id: string; state: ItemState }>('SELECT id, state FROM items');
    this.changedStmt = db.prepare<[], { id: string }>('SELECT id FROM items WHERE changed = 1 ORDER BY seq').pluck();
    this.shapesStmt = db.prepare<[], ItemShape>(
      `SELECT type, model, spec ->> '$.aspectRatio' AS aspectRatio, spec ->> '$.resolution' AS resolution, spec ->> '$.duration' AS duration,
         spec -> '$.inputs' IS NOT NULL AS edits,
         CASE WHEN spec -> '$.image' IS NOT NULL THEN 'image' WHEN spec -> '$.referenceImages' IS NOT NULL THEN 'referenceImages'
              WHEN spec -> '$.video' IS NOT NULL THEN 'video' WHEN spec -> '$.source' IS NOT NULL THEN 'source' END AS given,
         count(*) AS n
       FROM items GROUP BY 1, 2, 3, 4, 5, 6, 7`,
    );
    // From the tally the triggers keep (migration 7): a few rows, whatever the manifest's size.
    this.endedWithoutOutputStmt = db.prepare<[], { n: number | null }>(
      `SELECT sum(n) AS n FROM item_tally WHERE state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)}`,
    );
    this.problemsStmt = db.prepare<[], ItemProblem>(
      `SELECT id, state, coalesce(error_code, state) AS code, coalesce(error_message, '') AS message FROM items WHERE state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)} OR (state IN ${sqlStates(OPEN_STATES)} AND state <> 'pending' AND error_code IS NOT NULL) ORDER BY seq`,
    );
    this.waitsStmt = db.prepare<
      [{ now: number }],
      { state: ItemState; n: number; later: number; next_at: number | null }
    >(
      `SELECT state, count(*) AS n, sum(not_before > @now) AS later, min(CASE WHEN not_before > @now THEN not_before END) AS next_at
       FROM items WHERE state IN ${sqlStates(OPEN_STATES)} AND removed = 0 GROUP BY state`,
    );
    this.downloadsStmt = db.prepare<[], { id: string; job_id: string; key_fp: string | null }>(
      `SELECT i.id AS id, a.job_id AS job_id, a.key_fp AS key_fp FROM items i JOIN attempts a ON a.item_id = i.id AND a.n = i.attempt
       WHERE i.state = 'downloading' AND a.job_id IS NOT NULL ORDER BY i.seq`,
    );
    this.doneOutputsStmt = db.prepare<[], import('./outputs.js').OutputRow>(
      `SELECT o.* FROM items i JOIN attempts a ON a.item_id = i.id AND a.n = i.attempt JOIN outputs o ON o.job_id = a.job_id
       WHERE i.state = 'done' ORDER BY i.seq, o.idx`,
    );
    this.deferredStmt = db.prepare<[], { n: number }>(
      "SELECT count(*) AS n FROM items WHERE state = 'submitting' AND not_before > 0",
    );
    this.countsStmt = db.prepare<[], { state: ItemState; n: number }>(
      'SELECT state, sum(n) AS n FROM item_tally GROUP BY state',
    );
    // Through items_removed: nothing to read when the manifest removed nothing.
    this.removedCountsStmt = db.prepare<[], { state: ItemState; n: number }>(
      'SELECT state, count(*) AS n FROM items WHERE removed = 1 GROUP BY state',
    );
  }

  get(id: string): ItemRow | undefined {
    return this.byId.get(id);
  }

  /**
   * Brings the rows in line with the manifest. An item whose content changed
   * after it was submitted keeps its result and is flagged; `redoChanged`
   * puts it back to pending (a new attempt, so a new key).
   */
  sync(items: Iterable<ItemSync>, now: number, redoChanged: boolean): { added: number; changed: string[] } {
    const changed: string[] = [];
    const addedByType = { image: 0, video: 0 };
    // Which ids this manifest has, so the others can be marked removed (prepared here: a read-only store has no temp table).
    this.db.exec('CREATE TEMP TABLE IF NOT EXISTS synced_ids (id TEXT PRIMARY KEY)');
    const noteSynced = this.db.prepare('INSERT OR IGNORE INTO synced_ids (id) VALUES (?)');
    this.db
      .transaction(() => {
        this.clearDeps.run();
        this.db.exec('DELETE FROM synced_ids');
        // A first sync has nothing to compare with and nothing to mark removed: it only inserts.
        const first = this.anyStmt.get() === undefined;
        for (const item of items) {
          if (!first) noteSynced.run(item.id);
          this.insertDeps(item);
          const row = first ? undefined : this.byId.get(item.id);
          // The order of the work may change at any time: it is not content.
          if (row && row.priority !== (item.priority ?? 0))
            this.setPriority.run({ id: item.id, priority: item.priority ?? 0 });
          // Same content, other tags or row values: they ride in the spec, which is brought up to date (the request is unchanged).
          if (row && row.content_hash === item.contentHash && row.spec !== item.spec)
            this.setSpec.run({ id: item.id, spec: item.spec });
          if (!row) {
            this.insertItem(item, now, addedByType);
          } else if (row.content_hash === item.contentHash) {
            if (row.changed) this.markChanged.run({ id: item.id, seq: item.seq, changed: 0, now });
          } else if (row.attempt === 0) {
            this.updateUnsent.run({
              id: item.id,
              seq: item.seq,
              type: item.type,
              model: item.model,
              contentHash: item.contentHash,
              spec: item.spec,
              now,
            });
          } else if (
            redoChanged &&
            !(['queued', 'submitting', 'maybe_accepted', 'running'] as ItemState[]).includes(row.state)
          ) {
            this.updateUnsent.run({
              id: item.id,
              seq: item.seq,
              type: item.type,
              model: item.model,
              contentHash: item.contentHash,
              spec: item.spec,
              now,
            });
            this.life.redoChanged(item.id, now);
          } else {
            this.markChanged.run({ id: item.id, seq: item.seq, changed: 1, now });
            changed.push(item.id);
          }
        }
        this.tallyInserted(addedByType);
        if (first) return;
        // Only rows whose flag changes are written.
        this.db.exec('UPDATE items SET removed = 1 WHERE removed = 0 AND id NOT IN (SELECT id FROM synced_ids)');
        this.db.exec('UPDATE items SET removed = 0 WHERE removed = 1 AND id IN (SELECT id FROM synced_ids)');
        this.db.exec('DELETE FROM synced_ids');
      })
      .immediate();
    return { added: addedByType.image + addedByType.video, changed };
  }

  /** Whether the state holds no item yet (a first sync only inserts). */
  isEmpty(): boolean {
    return this.anyStmt.get() === undefined;
  }

  /**
   * A step of a first sync: inserts the items, with their dependencies, in
   * one transaction. Committed without a flush of its own: the items can be
   * written again from the manifest, and the next paid request's commit
   * flushes them.
   */
  insertNew(items: Iterable<ItemSync>, now: number): void {
    withRelaxedSync(this.db, () =>
      this.db
        .transaction(() => {
          const addedByType = { image: 0, video: 0 };
          for (const item of items) {
            this.insertDeps(item);
            this.insertItem(item, now, addedByType);
          }
          this.tallyInserted(addedByType);
        })
        .immediate(),
    );
  }

  private insertDeps(item: ItemSync): void {
    for (const dep of item.dependsOn) this.insertDep.run(item.id, dep);
  }

  /** A new item, counted by type for the tally. */
  private insertItem(item: ItemSync, now: number, addedByType: Record<'image' | 'video', number>): void {
    this.insert.run(
      item.id,
      item.seq,
      item.type,
      item.model,
      item.contentHash,
      item.spec,
      item.priority ?? 0,
      -(item.priority ?? 0),
      now,
    );
    addedByType[item.type]++;
  }

  /** No trigger counts an inserted item (migration 11): the tally gets what was inserted, once per type. */
  private tallyInserted(addedByType: Record<'image' | 'video', number>): void {
    for (const [type, n] of Object.entries(addedByType)) if (n > 0) this.tallyAdded.run({ type, n });
  }

  /** Every item's state, by id. */
  states(): Map<string, ItemState> {
    return new Map(this.statesStmt.all().map((r) => [r.id, r.state]));
  }

  /** Items flagged at the last sync: changed after they were submitted, kept as they were. */
  changedIds(): string[] {
    return this.changedStmt.all() as unknown as string[];
  }

  /** Each distinct combination of what the service's catalog and scopes judge (type, model, values, kind of input), with how many items have it. */
  shapes(): ItemShape[] {
    return this.shapesStmt.all();
  }

  /** Pending items of a type that are due and whose dependencies are all done, in manifest order after `afterSeq`. */
  /** Ready items of a type, highest priority first, then in manifest order, after the item `after` in that order. */
  ready(
    type: 'image' | 'video',
    now: number,
    after: { rank: number; seq: number } | undefined,
    limit: number,
  ): ItemRow[] {
    return (this.readySelected ?? this.readyStmt).all({
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
    this.selectedCountsStmt = this.db.prepare<[], { state: ItemState; n: number }>(
      'SELECT state, count(*) AS n FROM items WHERE id IN (SELECT id FROM selected_ids) GROUP BY state',
    );
    return this.db.prepare('SELECT id FROM selected_ids').pluck().all() as string[];
  }

  /** Items and credits per tag, for the items of the manifest that have tags (through items_tagged: nothing is read when none has). */
  byTag(): { tag: string; items: number; done: number; charged: number; refunded: number }[] {
    return this.db
      .prepare(
        `SELECT j.value AS tag, count(*) AS items, sum(i.state = 'done') AS done,
           sum((SELECT coalesce(sum(charged), 0) FROM attempts a WHERE a.item_id = i.id)) AS charged,
           sum((SELECT coalesce(sum(refunded), 0) FROM attempts a WHERE a.item_id = i.id)) AS refunded
         FROM items i, json_each(i.spec, '$.tags') j WHERE i.spec -> '$.tags' IS NOT NULL AND i.removed = 0 GROUP BY j.value ORDER BY j.value`,
      )
      .all() as { tag: string; items: number; done: number; charged: number; refunded: number }[];
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

  /** Open items with an attempt, by the key it belongs to ('' from before keys were recorded). */
  openByKey(): { key_fp: string; n: number }[] {
    return this.openByKeyStmt.all();
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

  /** How many items ended without an output (from the tally): when it has not moved, no item became doomed. */
  endedWithoutOutput(): number {
    return this.endedWithoutOutputStmt.get()?.n ?? 0;
  }

  /** Pending items that wait for an item which ended without an output: they can never run. */
  doomed(): DoomedItem[] {
    return this.doomedStmt.all();
  }

  /** The items `failuresByCode` counts, one by one in manifest order: what status lists to act on. */
  problems(): ItemProblem[] {
    return this.problemsStmt.all();
  }

  /** Items that ended badly, or wait for the next run with an error noted (a download or a read that could not finish), by their last error code. */
  failuresByCode(): Record<string, number> {
    return Object.fromEntries(this.failuresStmt.all().map((r) => [r.code, r.n]));
  }

  /**
   * `retry`: failed and skipped items (and downloads that stopped) go back.
   * An attempt that may have been accepted is resent with its own key, never
   * replaced; one stopped on a key conflict goes back only when named by id.
   */
  putBack(opts: { codes?: readonly string[] | undefined; ids?: readonly string[] | undefined; now: number }): {
    requeued: number;
    conflicts: string[];
  } {
    const codes = opts.codes?.length ? new Set(opts.codes) : undefined;
    const ids = opts.ids?.length ? new Set(opts.ids) : undefined;
    const conflicts: string[] = [];
    let requeued = 0;
    this.db
      .transaction(() => {
        for (const item of this.putBackCandidatesStmt.all()) {
          if (codes && !codes.has(item.error_code ?? '')) continue;
          if (ids && !ids.has(item.id)) continue;
          const attempt = this.latestAttemptStmt.get(item.id);
          if (attempt?.status === 'conflict' && !ids) {
            conflicts.push(item.id);
            continue;
          }
          // An attempt without a job is never replaced: one never sent goes out as it is, one sent is resent with its key.
          const unanswered =
            attempt && !attempt.job_id
              ? ({ created: 'queued', sent: 'maybe_accepted' } as const)[attempt.status as 'created' | 'sent']
              : undefined;
          const state = item.state === 'downloading' ? 'downloading' : (unanswered ?? 'pending');
          if (this.life.putBack(item.id, state, opts.now)) requeued++;
        }
      })
      .immediate();
    return { requeued, conflicts };
  }

  inState(state: ItemState): ItemRow[] {
    return this.inStatesStmt.all(state);
  }

  /** Items by state, of the manifest as last synced: items it no longer has are counted by `removed()`, not here. */
  counts(): Record<ItemState, number> {
    const out = Object.fromEntries(ITEM_STATES.map((s) => [s, 0])) as Record<ItemState, number>;
    for (const { state, n } of this.countsStmt.all()) out[state] = n;
    for (const { state, n } of this.removedCountsStmt.all()) out[state] -= n;
    return out;
  }

  /**
   * Open items by state: how many, how many wait for a time (a backoff, a
   * resend), and the earliest such time; what `status` and the run's
   * watchdog say each state waits for.
   */
  waitsByState(now: number): { state: ItemState; n: number; later: number; next_at: number | null }[] {
    return this.waitsStmt.all({ now });
  }

  /** Items whose job completed and whose outputs are not all on disk: each with its job and the key of its attempt (one query, not two per item). */
  downloadsToResume(): { id: string; job_id: string; key_fp: string | null }[] {
    return this.downloadsStmt.all();
  }

  /** The outputs of every done item's job (the latest attempt's), to check on disk. */
  doneOutputs(): import('./outputs.js').OutputRow[] {
    return this.doneOutputsStmt.all();
  }

  /** Submissions waiting for their time to be resent (a backoff, a 503): sent, unanswered, and holding no in-flight slot. */
  deferredResends(): number {
    return this.deferredStmt.get()!.n;
  }

  /** How many items the manifest no longer has. */
  removed(): number {
    return this.removedCountsStmt.all().reduce((sum, r) => sum + r.n, 0);
  }

  /** How many items reached a final state since `since`, and when the first and last of them did: the observed pace. */
  finishedSince(since: number): { n: number; first: number | null; last: number | null } {
    return this.finishedStmt.get(since)!;
  }

  /** Per type: items not final yet, those not yet sent, and those ever submitted. */
  workByType(): Record<'image' | 'video', { open: number; pending: number; submitted: number }> {
    const out = { image: { open: 0, pending: 0, submitted: 0 }, video: { open: 0, pending: 0, submitted: 0 } };
    for (const { type, ...n } of this.workStmt.all()) out[type] = n;
    return out;
  }

  /** What reports need of every item, without its whole stored spec. */
  /** A page of the report, in manifest order, after the given place (start with -Infinity, 0). */
  reportPage(afterSeq: number, afterRow: number, limit: number): ItemFacts[] {
    return this.reportStmt.all(afterSeq, afterRow, limit);
  }

  /** Items by state and model, every item counted (removed ones too: the report shows what was paid for). */
  reportTally(): ReportTally[] {
    return this.reportTallyStmt.all();
  }

  /** The names of the items' row columns and matrix values, in the order they first appear. */
  valueNames(): string[] {
    const names = new Set<string>();
    const seen = new Set<string>();
    for (const joined of this.valueNamesStmt.iterate()) {
      if (joined === null || seen.has(joined)) continue;
      seen.add(joined);
      for (const name of joined.split('\0')) names.add(name);
    }
    return [...names];
  }

  /** Items a canary may take: pending, in the manifest, waiting for no other item. */
  canaryCandidates(): { id: string; type: 'image' | 'video'; model: string }[] {
    return this.canaryStmt.all();
  }

  /** Each item's model and prompt: what a job list may echo of the item a job was made for. */
  echoes(): ItemEcho[] {
    return this.echoesStmt.all();
  }

  /** An item's stored spec. */
  specOf(id: string): string | undefined {
    return this.byId.get(id)?.spec;
  }

  all(): ItemRow[] {
    return this.db.prepare<[], ItemRow>('SELECT * FROM items ORDER BY seq').all();
  }
}
