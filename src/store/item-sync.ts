import { withRelaxedSync, type Db } from './db.js';
import type { Lifecycle } from './lifecycle.js';
import type { Gates } from './gates.js';
import type { ItemState } from './machine/states.js';
import type { ItemRow, ItemSync, ItemShape } from './items.js';

/** Items whose latest attempt was made from an earlier item's output of which a newer version is there now. */
const MADE_FROM_OLDER = `SELECT a.item_id FROM attempts a JOIN items i ON i.id = a.item_id AND i.attempt = a.n
  WHERE a.inputs IS NOT NULL AND i.state NOT IN ('pending', 'waiting') AND EXISTS (SELECT 1 FROM json_each(a.inputs) j
    WHERE j.value < (SELECT max(o.version) FROM outputs o WHERE o.item_id = j.key AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL))`;

/** The manifest's items written into the state: a first sync's inserts, a later sync's updates (changed items flagged, or put back with --redo-changed), and what a resume reads back of them. */
export class ItemSyncer {
  private readonly byId;
  private readonly indexSearch;
  private readonly indexTag;
  private readonly setPriority;
  private readonly setSpec;
  private readonly anyStmt;
  private readonly tallyAdded;
  private readonly updateUnsent;
  private readonly markChanged;
  private readonly clearDeps;
  private readonly insertDependency;
  private readonly statesStmt;
  private readonly changedStmt;
  private readonly madeFromOlderStmt;
  private readonly shapesStmt;

  constructor(
    private readonly db: Db,
    /** The item's life: every change of an item's state is one of its guarded transitions. */
    private readonly lifecycle: Lifecycle,
    /** The manifest's gates, written with the dependencies; a gated item waits for its gates' decisions. */
    private readonly gates: Gates,
  ) {
    this.byId = db.prepare<[string], ItemRow>('SELECT * FROM items WHERE id = ?');
    this.indexSearch = db.prepare<[number | bigint, string]>('INSERT INTO item_search (rowid, text) VALUES (?, ?)');
    this.indexTag = db.prepare<[string, number, number | bigint]>('INSERT OR IGNORE INTO item_tags VALUES (?, ?, ?)');
    this.setPriority = db.prepare('UPDATE items SET priority = @priority, rank = -@priority WHERE id = @id');
    this.setSpec = db.prepare('UPDATE items SET spec = @spec WHERE id = @id');
    this.anyStmt = db.prepare('SELECT 1 FROM items LIMIT 1');
    this.tallyAdded = db.prepare(
      "INSERT INTO item_tally VALUES (@type, 'pending', 0, @n) ON CONFLICT DO UPDATE SET n = n + @n",
    );
    this.updateUnsent = db.prepare(
      'UPDATE items SET seq = @seq, type = @type, model = @model, content_hash = @contentHash, spec = @spec, changed = 0, updated_at = @now WHERE id = @id',
    );
    this.markChanged = db.prepare('UPDATE items SET seq = @seq, changed = @changed, updated_at = @now WHERE id = @id');
    this.clearDeps = db.prepare('DELETE FROM deps');
    this.insertDependency = db.prepare('INSERT OR IGNORE INTO deps (item_id, dep_id) VALUES (?, ?)');
    this.statesStmt = db.prepare<[], { id: string; state: ItemState }>('SELECT id, state FROM items');
    // Changed: its content since it was submitted (flagged by a sync), or an earlier item's output it was made from
    // has a newer version since (its latest attempt's inputs, migration 27).
    this.changedStmt = db
      .prepare<[], { id: string }>(
        `SELECT id FROM items WHERE removed = 0 AND (changed = 1 OR id IN (${MADE_FROM_OLDER})) ORDER BY seq`,
      )
      .pluck();
    this.madeFromOlderStmt = db.prepare<[], { id: string }>(MADE_FROM_OLDER).pluck();
    this.shapesStmt = db.prepare<[], ItemShape>(
      `SELECT type, model, spec ->> '$.aspectRatio' AS aspectRatio, spec ->> '$.resolution' AS resolution, spec ->> '$.duration' AS duration,
         spec -> '$.inputs' IS NOT NULL AS edits,
         CASE WHEN spec -> '$.image' IS NOT NULL THEN 'image' WHEN spec -> '$.referenceImages' IS NOT NULL THEN 'referenceImages'
              WHEN spec -> '$.video' IS NOT NULL THEN 'video' WHEN spec -> '$.source' IS NOT NULL THEN 'source' END AS input,
         count(*) AS n
       FROM items GROUP BY 1, 2, 3, 4, 5, 6, 7`,
    );
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
        this.gates.clear();
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
          } else if (row.attempt === 0 || (redoChanged && this.lifecycle.redoChanged(item.id, now))) {
            // Never sent, or put back by --redo-changed (never an item on the wire or in flight: the lifecycle guards it).
            const { id, seq, type, model, contentHash, spec } = item;
            this.updateUnsent.run({ id, seq, type, model, contentHash, spec, now });
          } else {
            this.markChanged.run({ id: item.id, seq: item.seq, changed: 1, now });
            changed.push(item.id);
          }
        }
        this.tallyInserted(addedByType);
        // Made from an earlier item's output since made again: --redo-changed makes it again, from the new one.
        if (redoChanged)
          for (const id of this.madeFromOlderStmt.all() as unknown as string[]) this.lifecycle.redoChanged(id, now);
        // A gate added, removed or renamed: every gated item not sent goes where its gates now put it.
        this.gates.settleAll();
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
          const gates = new Set<string>();
          for (const item of items) {
            this.insertDeps(item);
            this.insertItem(item, now, addedByType);
            for (const gate of item.gates ?? []) gates.add(gate);
          }
          this.tallyInserted(addedByType);
          // The step's gated items wait as their gates put them (a gate not written yet settles them when the sync ends).
          this.gates.settle(gates);
        })
        .immediate(),
    );
  }

  private insertDeps(item: ItemSync): void {
    for (const dependency of item.dependsOn) this.insertDependency.run(item.id, dependency);
    if (item.gates?.length) this.gates.add(item.id, item.gates);
  }

  /** A new item, counted by type for the tally, and indexed for search and by its tags (migration 25). */
  private insertItem(item: ItemSync, now: number, addedByType: Record<'image' | 'video', number>): void {
    const rowid = this.lifecycle.add(
      item.id,
      item.seq,
      item.type,
      item.model,
      item.contentHash,
      item.spec,
      item.priority ?? 0,
      now,
    );
    addedByType[item.type]++;
    // Here and not in a trigger: a per-row trigger on insert tripled the cost of writing a 100,000-row catalog.
    const spec = JSON.parse(item.spec) as { prompt?: string; values?: Record<string, unknown>; tags?: string[] };
    const values = spec.values ? Object.values(spec.values) : [];
    this.indexSearch.run(rowid, [item.id, spec.prompt ?? '', ...values, ...(spec.tags ?? [])].join('\n'));
    for (const tag of spec.tags ?? []) this.indexTag.run(tag, item.seq, rowid);
  }

  /** No trigger counts an inserted item (migration 11): the tally gets what was inserted, once per type. */
  private tallyInserted(addedByType: Record<'image' | 'video', number>): void {
    for (const [type, n] of Object.entries(addedByType)) if (n > 0) this.tallyAdded.run({ type, n });
  }

  /** Every item's state, by id. */
  states(): Map<string, ItemState> {
    return new Map(this.statesStmt.all().map((r) => [r.id, r.state]));
  }

  /** Items changed after they were submitted, kept as they were: their content (flagged at the last sync), or an input made again since. */
  changedIds(): string[] {
    return this.changedStmt.all() as unknown as string[];
  }

  /** Each distinct combination of what the service's catalog and scopes judge (type, model, values, kind of input), with how many items have it. */
  shapes(): ItemShape[] {
    return this.shapesStmt.all();
  }
}
