import type { Db } from './db.js';
import {
  ENDED_STATES,
  ENDED_WITHOUT_OUTPUT,
  ITEM_STATES,
  OPEN_STATES,
  sqlStates,
  WAITING_STATES,
  type ItemState,
} from './machine/states.js';
import type { ItemProblem, ItemFacts, ItemEcho, ReportTally } from './items.js';

/** Not an item a person's decision skipped (a rejected gate): that is no failure, and no retry puts it back. */
const NOT_DECIDED = "NOT (state = 'skipped' AND error_code IS 'GATE_REJECTED')";

/** What status, the live line, the results files and reconcile read of the items: counts, failures, waits, pages of the report. Reads only. */
export class ItemReports {
  private readonly echoesStmt;
  private readonly openByKeyStmt;
  private readonly failuresStmt;
  private readonly finishedStmt;
  private readonly workStmt;
  private readonly reportStmt;
  private readonly reportTallyStmt;
  private readonly valueNamesStmt;
  private readonly endedWithoutOutputStmt;
  private readonly problemsStmt;
  private readonly decidedSkipsStmt;
  private readonly waitsStmt;
  private readonly deferredStmt;
  private readonly countsStmt;
  private readonly removedCountsStmt;

  constructor(private readonly db: Db) {
    this.echoesStmt = db.prepare<[], ItemEcho>(
      "SELECT id, model, spec ->> '$.prompt' AS prompt FROM items ORDER BY seq",
    );
    this.openByKeyStmt = db.prepare<[], { key_fp: string; n: number }>(
      `SELECT coalesce(a.key_fp, '') AS key_fp, count(*) AS n FROM items i JOIN attempts a ON a.item_id = i.id AND a.n = i.attempt
       WHERE i.state IN ('queued', 'submitting', 'maybe_accepted', 'running', 'downloading') GROUP BY 1 ORDER BY 1`,
    );
    this.failuresStmt = db.prepare<[], { code: string; n: number }>(
      `SELECT coalesce(error_code, state) AS code, count(*) AS n FROM items WHERE (state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)} AND ${NOT_DECIDED}) OR (state IN ${sqlStates(OPEN_STATES)} AND state <> 'pending' AND error_code IS NOT NULL) GROUP BY 1 ORDER BY 2 DESC`,
    );
    this.finishedStmt = db.prepare<[number], { n: number; first: number | null; last: number | null }>(
      `SELECT count(*) AS n, min(updated_at) AS first, max(updated_at) AS last FROM items WHERE state IN ${sqlStates(ENDED_STATES)} AND updated_at >= ?`,
    );
    this.workStmt = db.prepare<
      [],
      { type: 'image' | 'video'; open: number; pending: number; waiting: number; submitted: number }
    >(
      `SELECT type, sum(CASE WHEN state IN ${sqlStates(OPEN_STATES)} THEN n ELSE 0 END) AS open, sum(CASE WHEN state = 'pending' THEN n ELSE 0 END) AS pending,
         sum(CASE WHEN state = 'waiting' THEN n ELSE 0 END) AS waiting, sum(attempted * n) AS submitted FROM item_tally GROUP BY type`,
    );
    this.reportStmt = db.prepare<[number, number, number], ItemFacts>(
      `SELECT i.seq, i.rowid AS row, i.id, i.state, i.type, i.model, i.spec ->> '$.prompt' AS prompt, i.spec -> '$.values' AS values_json, i.spec -> '$.tags' AS tags_json,
         i.spec ->> '$.aspectRatio' AS aspect_ratio, i.spec ->> '$.resolution' AS resolution, i.spec ->> '$.duration' AS duration, i.error_code, i.error_message,
         (SELECT json_group_array(job_id) FROM (SELECT job_id FROM attempts WHERE item_id = i.id AND job_id IS NOT NULL ORDER BY n)) AS job_ids,
         (SELECT coalesce(sum(charged), 0) FROM attempts WHERE item_id = i.id) AS charged,
         (SELECT coalesce(sum(refunded), 0) FROM attempts WHERE item_id = i.id) AS refunded,
         (SELECT json_group_array(json_array(path, bytes, sha256, version, job_id, superseded_at IS NULL, published_to,
            json((SELECT json_group_array(json_array(d.path, d.format, d.width, d.height, d.bytes, d.sha256)) FROM derivatives d WHERE d.job_id = o.job_id AND d.idx = o.idx))))
          FROM (SELECT path, bytes, sha256, version, job_id, idx, superseded_at, published_to FROM outputs WHERE item_id = i.id AND path IS NOT NULL AND sha256 IS NOT NULL ORDER BY version, idx) o) AS files,
         (SELECT json_group_array(json_array(version, decision, note, decided_at, by, (SELECT d.by FROM decisions d
            WHERE d.item_id = r.item_id AND d.version = r.version ORDER BY d.seq DESC LIMIT 1))) FROM reviews r WHERE r.item_id = i.id) AS reviews,
         CASE WHEN i.state = 'waiting' THEN (SELECT json_group_array(gate_id) FROM gates WHERE item_id = i.id) END AS gates_json
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
    // From the tally the triggers keep (migration 7): a few rows, whatever the manifest's size.
    this.endedWithoutOutputStmt = db.prepare<[], { n: number | null }>(
      `SELECT sum(n) AS n FROM item_tally WHERE state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)}`,
    );
    this.problemsStmt = db.prepare<[], ItemProblem>(
      `SELECT id, state, coalesce(error_code, state) AS code, coalesce(error_message, '') AS message FROM items WHERE (state IN ${sqlStates(ENDED_WITHOUT_OUTPUT)} AND ${NOT_DECIDED}) OR (state IN ${sqlStates(OPEN_STATES)} AND state <> 'pending' AND error_code IS NOT NULL) ORDER BY seq`,
    );
    this.decidedSkipsStmt = db.prepare<[], ItemProblem>(
      "SELECT id, state, error_code AS code, coalesce(error_message, '') AS message FROM items WHERE state = 'skipped' AND error_code = 'GATE_REJECTED' AND removed = 0 ORDER BY seq",
    );
    this.waitsStmt = db.prepare<
      [{ now: number }],
      { state: ItemState; n: number; later: number; next_at: number | null }
    >(
      `SELECT state, count(*) AS n, sum(not_before > @now) AS later, min(CASE WHEN not_before > @now THEN not_before END) AS next_at
       FROM items WHERE state IN ${sqlStates([...OPEN_STATES, ...WAITING_STATES])} AND removed = 0 GROUP BY state`,
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

  /**
   * Items and credits per tag, for the items of the manifest that have tags (through items_tagged: nothing is read
   * when none has; `+i.removed` keeps the planner off the review grid's (removed, …) indexes, which read every item).
   */
  byTag(): { tag: string; items: number; done: number; charged: number; refunded: number }[] {
    return this.db
      .prepare(
        `SELECT j.value AS tag, count(*) AS items, sum(i.state = 'done') AS done,
           sum((SELECT coalesce(sum(charged), 0) FROM attempts a WHERE a.item_id = i.id)) AS charged,
           sum((SELECT coalesce(sum(refunded), 0) FROM attempts a WHERE a.item_id = i.id)) AS refunded
         FROM items i, json_each(i.spec, '$.tags') j WHERE i.spec -> '$.tags' IS NOT NULL AND +i.removed = 0 GROUP BY j.value ORDER BY j.value`,
      )
      .all() as { tag: string; items: number; done: number; charged: number; refunded: number }[];
  }

  /** Open items with an attempt, by the key it belongs to ('' from before keys were recorded). */
  openByKey(): { key_fp: string; n: number }[] {
    return this.openByKeyStmt.all();
  }

  /** How many items ended without an output (from the tally): when it has not moved, no item became doomed. */
  endedWithoutOutput(): number {
    return this.endedWithoutOutputStmt.get()?.n ?? 0;
  }

  /** Items a person's decision skipped (a rejected gate): never paid, never a failure, put back by no retry. */
  skippedByDecision(): ItemProblem[] {
    return this.decidedSkipsStmt.all();
  }

  /** The items `failuresByCode` counts, one by one in manifest order: what status lists to act on. */
  problems(): ItemProblem[] {
    return this.problemsStmt.all();
  }

  /** Items that ended badly, or wait for the next run with an error noted (a download or a read that could not finish), by their last error code. */
  failuresByCode(): Record<string, number> {
    return Object.fromEntries(this.failuresStmt.all().map((r) => [r.code, r.n]));
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
  workByType(): Record<'image' | 'video', { open: number; pending: number; waiting: number; submitted: number }> {
    const out = {
      image: { open: 0, pending: 0, waiting: 0, submitted: 0 },
      video: { open: 0, pending: 0, waiting: 0, submitted: 0 },
    };
    for (const { type, ...n } of this.workStmt.all()) out[type] = n;
    return out;
  }

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

  /** Each item's model and prompt: what a job list may echo of the item a job was made for. */
  echoes(): ItemEcho[] {
    return this.echoesStmt.all();
  }
}
