import type { Db } from './db.js';
import type { Lifecycle } from './lifecycle.js';
import type { ItemState } from './machine/states.js';

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
  /** [[path, bytes, sha256, version, jobId, current (1|0)], …] of its verified outputs, every version's, oldest first. */
  files: string;
  /** [[version, decision, note, decidedAt, kind, decidedBy], …] of its review decisions (decidedBy from the record). */
  reviews: string;
  /** While it waits for a decision: [gateId, …] of its gates. */
  gates_json: string | null;
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
  /** The ids of the items it waits for (their outputs or jobs are its inputs, or they are its gates). */
  dependsOn: readonly string[];
  /** Its gates: it is sent only once a person approved each one's current version. */
  gates?: readonly string[];
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
  /** The input it was given, if any. */
  input: 'image' | 'referenceImages' | 'video' | 'source' | null;
  n: number;
}

/** Items: the manifest's items as rows with a state, an attempt count and their last error. */
export class Items {
  private readonly byId;
  private readonly putBackCandidatesStmt;
  private readonly latestAttemptStmt;

  constructor(
    private readonly db: Db,
    /** The item's life: every change of an item's state is one of its guarded transitions. */
    private readonly lifecycle: Lifecycle,
  ) {
    this.byId = db.prepare<[string], ItemRow>('SELECT * FROM items WHERE id = ?');
    this.putBackCandidatesStmt = db.prepare<[], ItemRow>(
      // A gate's rejection is a person's decision, not a failure: it is undone in review, not retried.
      "SELECT * FROM items WHERE (state = 'failed' OR (state = 'skipped' AND error_code IS NOT 'GATE_REJECTED')) OR (state = 'downloading' AND error_code IS NOT NULL) ORDER BY seq",
    );
    this.latestAttemptStmt = db.prepare<[string], { status: string; job_id: string | null }>(
      'SELECT status, job_id FROM attempts WHERE item_id = ? ORDER BY n DESC LIMIT 1',
    );
  }

  get(id: string): ItemRow | undefined {
    return this.byId.get(id);
  }

  /**
   * `retry`: failed and skipped items (and downloads that stopped) go back.
   * An attempt that may have been accepted is resent with its own key, never
   * replaced; one stopped on a key conflict goes back only when named by id.
   */
  putBack(options: { codes?: readonly string[] | undefined; ids?: readonly string[] | undefined; now: number }): {
    requeued: number;
    conflicts: string[];
  } {
    const codes = options.codes?.length ? new Set(options.codes) : undefined;
    const ids = options.ids?.length ? new Set(options.ids) : undefined;
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
          if (this.lifecycle.putBack(item.id, state, options.now)) requeued++;
        }
      })
      .immediate();
    return { requeued, conflicts };
  }

  /**
   * `--redo-rejected`, `retry --rejected`: the done items whose current
   * version was rejected in review go back to pending, for one new attempt
   * each. Returns their ids.
   */
  putBackRejected(rejected: readonly string[], now: number): string[] {
    return this.db.transaction(() => rejected.filter((id) => this.lifecycle.redoRejected(id, now))).immediate();
  }

  /** An item's stored spec. */
  specOf(id: string): string | undefined {
    return this.byId.get(id)?.spec;
  }

  all(): ItemRow[] {
    return this.db.prepare<[], ItemRow>('SELECT * FROM items ORDER BY seq').all();
  }
}
