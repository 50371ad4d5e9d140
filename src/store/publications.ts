import type { Db } from './db.js';

/** An output saved and verified locally, waiting to be published to the bucket. */
export interface Unpublished {
  job_id: string;
  idx: number;
  item_id: string;
  path: string;
  bytes: number;
  sha256: string;
  content_type: string | null;
}

/** What waits to be published: how many outputs and bytes, and how many failed for good in a run. */
export interface PublicationCounts {
  published: number;
  waiting: number;
  waitingBytes: number;
  failed: number;
}

/**
 * An output's second durable step when outputs go to a bucket: saved and
 * verified locally (its download), then published, verified in the bucket
 * and recorded here; only then may its local copy go. Each transition is
 * guarded by the bytes it was verified as, so a copy downloaded again since
 * is never taken for the published one.
 */
export class Publications {
  private readonly waitingStmt;
  private readonly publishedStmt;
  private readonly failedStmt;
  private readonly countsStmt;
  private readonly clearFailuresStmt;

  constructor(db: Db) {
    this.waitingStmt = db.prepare<[], Unpublished>(
      `SELECT job_id, idx, item_id, path, bytes, sha256, content_type FROM outputs
       WHERE published_at IS NULL AND sha256 IS NOT NULL AND path IS NOT NULL ORDER BY downloaded_at, job_id, idx`,
    );
    this.publishedStmt = db.prepare(
      `UPDATE outputs SET published_at = @now, published_to = @url, publish_error = NULL
       WHERE job_id = @jobId AND idx = @idx AND sha256 = @sha256 AND published_at IS NULL`,
    );
    this.failedStmt = db.prepare(
      'UPDATE outputs SET publish_error = @message WHERE job_id = @jobId AND idx = @idx AND published_at IS NULL',
    );
    this.clearFailuresStmt = db.prepare(
      'UPDATE outputs SET publish_error = NULL WHERE publish_error IS NOT NULL AND published_at IS NULL',
    );
    this.countsStmt = db.prepare<[], PublicationCounts>(
      `SELECT count(published_at) AS published,
              count(*) FILTER (WHERE published_at IS NULL AND sha256 IS NOT NULL) AS waiting,
              coalesce(sum(bytes) FILTER (WHERE published_at IS NULL AND sha256 IS NOT NULL), 0) AS waitingBytes,
              count(publish_error) AS failed
       FROM outputs`,
    );
  }

  /** Every output saved and not yet published, oldest first (a resumed run publishes what the last one left). */
  waiting(): Unpublished[] {
    return this.waitingStmt.all();
  }

  /** Verified in the bucket at `url`: true when recorded (false: downloaded again since, or recorded already). */
  published(out: Pick<Unpublished, 'job_id' | 'idx' | 'sha256'>, url: string, now: number): boolean {
    return this.publishedStmt.run({ jobId: out.job_id, idx: out.idx, sha256: out.sha256, url, now }).changes === 1;
  }

  /** Not publishable in this run (its name is held by another object): kept locally, tried again by the next run. */
  failed(out: Pick<Unpublished, 'job_id' | 'idx'>, message: string): void {
    this.failedStmt.run({ jobId: out.job_id, idx: out.idx, message });
  }

  /** A new run tries again what an earlier one could not publish. */
  clearFailures(): void {
    this.clearFailuresStmt.run();
  }

  counts(): PublicationCounts {
    return this.countsStmt.get()!;
  }
}
