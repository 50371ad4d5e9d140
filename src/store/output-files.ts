import { withRelaxedSync, type Db } from './db.js';

export interface OutputRow {
  job_id: string;
  idx: number;
  item_id: string;
  path: string | null;
  bytes: number | null;
  sha256: string | null;
  content_type: string | null;
  link_issued_at: number | null;
  downloaded_at: number | null;
  /** The file's modification time (ms) when it was last verified against `sha256`. */
  mtime_ms: number | null;
  /** The item's generation these outputs belong to (1, then 2 after a regeneration, …). */
  version: number;
  /** When a later job of the item completed: these outputs stay on disk, no longer current. */
  superseded_at: number | null;
  /** When it was verified in the bucket (outputs published to one), and the object's URL. */
  published_at: number | null;
  published_to: string | null;
  /** Why the latest publication of it failed for good in a run (a name held by another object). */
  publish_error: string | null;
}

/** A downloaded output as verified on disk. */
export interface SavedFile {
  path: string;
  bytes: number;
  sha256: string;
  contentType: string | null;
  mtimeMs: number;
}

/** Outputs of completed jobs: where each went, its size and hash. */
export class OutputFiles {
  private readonly doneStmt;
  private readonly ofJobStmt;
  private readonly firstFileStmt;
  private readonly missingStmt;
  private readonly supersedeStmt;
  private readonly versionOfJobStmt;
  private readonly nextVersionStmt;
  private readonly ownerStmt;
  private readonly claimStmt;
  private readonly verifiedStmt;

  constructor(private readonly db: Db) {
    this.claimStmt = db.prepare(
      'INSERT INTO outputs (job_id, idx, item_id, path, link_issued_at, version) VALUES (@jobId, @idx, @itemId, @path, @now, @version) ON CONFLICT (job_id, idx) DO UPDATE SET path = @path, link_issued_at = @now',
    );
    this.doneStmt = db.prepare(
      'UPDATE outputs SET path = @path, bytes = @bytes, sha256 = @sha256, content_type = @contentType, mtime_ms = @mtimeMs, downloaded_at = @now WHERE job_id = @jobId AND idx = @idx',
    );
    this.verifiedStmt = db.prepare('UPDATE outputs SET mtime_ms = ? WHERE job_id = ? AND idx = ?');
    this.ofJobStmt = db.prepare<[string], OutputRow>('SELECT * FROM outputs WHERE job_id = ? ORDER BY idx');
    this.missingStmt = db.prepare('UPDATE outputs SET sha256 = NULL WHERE job_id = ? AND idx = ?');
    this.supersedeStmt = db.prepare(
      'UPDATE outputs SET superseded_at = ? WHERE item_id = ? AND job_id <> ? AND superseded_at IS NULL',
    );
    this.versionOfJobStmt = db
      .prepare<[string], number>('SELECT version FROM outputs WHERE job_id = ? LIMIT 1')
      .pluck();
    this.nextVersionStmt = db
      .prepare<[string], number>('SELECT coalesce(max(version), 0) + 1 FROM outputs WHERE item_id = ?')
      .pluck();
    this.ownerStmt = db.prepare<[string], Pick<OutputRow, 'item_id' | 'job_id' | 'idx'>>(
      'SELECT item_id, job_id, idx FROM outputs WHERE path = ? LIMIT 1',
    );
    this.firstFileStmt = db
      .prepare<[string], string>(
        'SELECT path FROM outputs WHERE item_id = ? AND path IS NOT NULL AND sha256 IS NOT NULL AND superseded_at IS NULL ORDER BY job_id, idx LIMIT 1',
      )
      .pluck();
  }

  markDownloaded(jobId: string, idx: number, file: SavedFile, now: number): void {
    this.doneStmt.run({ jobId, idx, ...file, now });
  }

  /** The file was touched but still hashes to its sha256: remember its new modification time. */
  stillVerified(jobId: string, idx: number, mtimeMs: number): void {
    this.verifiedStmt.run(mtimeMs, jobId, idx);
  }

  /** The file is gone from disk: download it again. */
  markMissing(jobId: string, idx: number): void {
    this.missingStmt.run(jobId, idx);
  }

  /** The item's current outputs are now those of `jobId` (a job that replaced an earlier one): the earlier ones stay, superseded. */
  supersedeOtherJobs(itemId: string, jobId: string, now: number): void {
    this.supersedeStmt.run(now, itemId, jobId);
  }

  /** The version a job's outputs are saved as: the one it already has, or the item's next. */
  versionFor(itemId: string, jobId: string): number {
    return this.versionOfJobStmt.get(jobId) ?? this.nextVersionStmt.get(itemId)!;
  }

  /** The output recorded under this file name, if any. */
  ownerOf(path: string): Pick<OutputRow, 'item_id' | 'job_id' | 'idx'> | undefined {
    return this.ownerStmt.get(path);
  }

  /**
   * Names the file this output will be saved as, before any byte is written:
   * the claim that ownerOf sees. The output's row starts here, with when its
   * link was in hand.
   */
  claimPath(jobId: string, idx: number, itemId: string, path: string, version: number, now: number): void {
    // Lost to a power cut with the file's save, the same name is claimed again by the download that redoes it.
    withRelaxedSync(this.db, () => this.claimStmt.run({ jobId, idx, itemId, path, version, now }));
  }

  ofJob(jobId: string): OutputRow[] {
    return this.ofJobStmt.all(jobId);
  }

  /** The path of an item's first verified output, relative to the output dir. */
  firstFileOf(itemId: string): string | undefined {
    return this.firstFileStmt.get(itemId);
  }
}
