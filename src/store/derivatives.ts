import type { Db } from './db.js';

/** A web copy of an output, as written. */
export interface DerivativeRow {
  job_id: string;
  idx: number;
  path: string;
  format: string;
  width: number;
  height: number;
  bytes: number;
  sha256: string;
  made_at: number;
}

/** A current image output whose item asks for web copies: what a run finishes. */
export interface ToFinish {
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
export class Derivatives {
  private readonly madeStmt;
  private readonly ofOutputStmt;
  private readonly toFinishStmt;
  private readonly isCopyStmt;

  constructor(db: Db) {
    this.madeStmt = db.prepare(
      `INSERT INTO derivatives (job_id, idx, path, format, width, height, bytes, sha256, made_at)
       VALUES (@job_id, @idx, @path, @format, @width, @height, @bytes, @sha256, @made_at)
       ON CONFLICT (job_id, idx, path) DO UPDATE SET format = @format, width = @width, height = @height,
         bytes = @bytes, sha256 = @sha256, made_at = @made_at`,
    );
    this.isCopyStmt = db.prepare<[string], number>('SELECT 1 FROM derivatives WHERE path = ? LIMIT 1').pluck();
    this.ofOutputStmt = db.prepare<[string, number], DerivativeRow>(
      'SELECT * FROM derivatives WHERE job_id = ? AND idx = ? ORDER BY path',
    );
    // The current, verified outputs of image items that ask for copies.
    this.toFinishStmt = db.prepare<[], ToFinish>(
      `SELECT o.item_id, o.job_id, o.idx, o.path, o.version, i.model, json_extract(i.spec, '$.finish') AS finish,
              (SELECT count(*) FROM derivatives d WHERE d.job_id = o.job_id AND d.idx = o.idx) AS made,
              EXISTS (SELECT 1 FROM reviews r WHERE r.item_id = o.item_id AND r.version = o.version) AS reviewed
       FROM outputs o JOIN items i ON i.id = o.item_id
       WHERE o.sha256 IS NOT NULL AND o.path IS NOT NULL AND o.superseded_at IS NULL
         AND i.type = 'image' AND json_extract(i.spec, '$.finish') IS NOT NULL
       ORDER BY o.downloaded_at, o.job_id, o.idx`,
    );
  }

  made(row: DerivativeRow): void {
    this.madeStmt.run(row);
  }

  /** Whether a path is a recorded copy (the review server serves recorded outputs and copies, nothing else). */
  isCopy(path: string): boolean {
    return this.isCopyStmt.get(path) !== undefined;
  }

  ofOutput(jobId: string, idx: number): DerivativeRow[] {
    return this.ofOutputStmt.all(jobId, idx);
  }

  /** Every current image output whose item asks for copies, with how many it has: a run makes what is missing. */
  toFinish(): ToFinish[] {
    return this.toFinishStmt.all();
  }
}
