import type { Db } from './db.js';

/** A web copy of an output, as written. */
export interface WebCopyRow {
  job_id: string;
  idx: number;
  path: string;
  format: string;
  width: number;
  height: number;
  bytes: number;
  sha256: string;
  made_at: number;
  /** In place: written in the out folder, or verified in the bucket; null while it waits to be published. */
  published_at?: number | null;
}

/** A current image output whose item asks for web copies: what a run finishes. */
export interface ToCopy {
  item_id: string;
  job_id: string;
  idx: number;
  path: string;
  model: string;
  /** The item's finishing (JSON of its spec's `finish`). */
  finish: string;
  /** How many of its copies are recorded. */
  made: number;
  /** The item's version these outputs are, and whether it has a review decision (a person's or a check's). */
  version: number;
  reviewed: number;
}

/** Web copies of image outputs, recorded as each is written (size and sha256), so a resume makes only what is missing. */
export class WebCopies {
  private readonly madeStmt;
  private readonly ofOutputStmt;
  private readonly toCopyStmt;
  private readonly isCopyStmt;
  private readonly forgetStmt;
  private readonly unpublishedStmt;
  private readonly missingStmt;

  constructor(db: Db) {
    this.madeStmt = db.prepare(
      `INSERT INTO derivatives (job_id, idx, path, format, width, height, bytes, sha256, made_at, published_at)
       VALUES (@job_id, @idx, @path, @format, @width, @height, @bytes, @sha256, @made_at, @published_at)
       ON CONFLICT (job_id, idx, path) DO UPDATE SET format = @format, width = @width, height = @height,
         bytes = @bytes, sha256 = @sha256, made_at = @made_at, published_at = @published_at,
         published_to = NULL, publish_error = NULL`,
    );
    this.forgetStmt = db.prepare(
      'DELETE FROM derivatives WHERE job_id = ? AND idx = ? AND path = ? AND published_at IS NULL',
    );
    this.unpublishedStmt = db.prepare<[], Pick<WebCopyRow, 'job_id' | 'idx' | 'path'>>(
      'SELECT job_id, idx, path FROM derivatives WHERE published_at IS NULL',
    );
    // Copies the current image outputs are owed and that are not recorded (never made, or failed).
    this.missingStmt = db
      .prepare<[], number>(
        `SELECT coalesce(sum(max(0, json_array_length(i.spec, '$.finish.derivatives')
                  - (SELECT count(*) FROM derivatives d WHERE d.job_id = o.job_id AND d.idx = o.idx))), 0)
         FROM items i INDEXED BY items_asking_copies JOIN outputs o ON o.item_id = i.id
         WHERE json_array_length(i.spec, '$.finish.derivatives') > 0 AND i.type = 'image'
           AND o.sha256 IS NOT NULL AND o.path IS NOT NULL AND o.superseded_at IS NULL`,
      )
      .pluck();
    this.isCopyStmt = db.prepare<[string], number>('SELECT 1 FROM derivatives WHERE path = ? LIMIT 1').pluck();
    this.ofOutputStmt = db.prepare<[string, number], WebCopyRow>(
      'SELECT * FROM derivatives WHERE job_id = ? AND idx = ? ORDER BY path',
    );
    // The current, verified outputs of image items that ask for copies.
    this.toCopyStmt = db.prepare<[], ToCopy>(
      `SELECT o.item_id, o.job_id, o.idx, o.path, o.version, i.model, json_extract(i.spec, '$.finish') AS finish,
              (SELECT count(*) FROM derivatives d WHERE d.job_id = o.job_id AND d.idx = o.idx) AS made,
              EXISTS (SELECT 1 FROM reviews r WHERE r.item_id = o.item_id AND r.version = o.version) AS reviewed
       FROM outputs o JOIN items i ON i.id = o.item_id
       WHERE o.sha256 IS NOT NULL AND o.path IS NOT NULL AND o.superseded_at IS NULL
         AND i.type = 'image' AND json_extract(i.spec, '$.finish') IS NOT NULL
       ORDER BY o.downloaded_at, o.job_id, o.idx`,
    );
  }

  /** Written (in place, or staged to be published when `published_at` is null), with its size and sha256. */
  made(row: WebCopyRow): void {
    this.madeStmt.run({ ...row, published_at: row.published_at ?? null });
  }

  /** A copy waiting to be published whose staged file is gone: unrecorded, so that it is made again. */
  forget(row: Pick<WebCopyRow, 'job_id' | 'idx' | 'path'>): void {
    this.forgetStmt.run(row.job_id, row.idx, row.path);
  }

  /** Copies recorded and not yet published. */
  unpublished(): Pick<WebCopyRow, 'job_id' | 'idx' | 'path'>[] {
    return this.unpublishedStmt.all();
  }

  /** Copies the current image outputs ask for and that no run has recorded yet (not made, or failed to be). */
  missing(): number {
    return this.missingStmt.get() ?? 0;
  }

  /** Whether a path is a recorded copy (the review server serves recorded outputs and copies, nothing else). */
  isCopy(path: string): boolean {
    return this.isCopyStmt.get(path) !== undefined;
  }

  ofOutput(jobId: string, idx: number): WebCopyRow[] {
    return this.ofOutputStmt.all(jobId, idx);
  }

  /** Every current image output whose item asks for copies, with how many it has: a run makes what is missing. */
  toCopy(): ToCopy[] {
    return this.toCopyStmt.all();
  }
}
