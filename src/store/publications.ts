import type { Db } from './db.js';

/** An output or a web copy saved and verified locally, waiting to be published to the bucket. */
export interface Unpublished {
  itemId: string;
  jobId: string;
  /** The output's index in its job (a copy's: the output it was made from). */
  output: number;
  path: string;
  bytes: number;
  sha256: string;
  contentType: string | null;
  /** A web copy of the output, not the output itself. */
  copy: boolean;
}

/** A row of the waiting query, as SQLite gives it. */
interface UnpublishedRow {
  job_id: string;
  idx: number;
  item_id: string;
  path: string;
  bytes: number;
  sha256: string;
  content_type: string | null;
  copy: 0 | 1;
}

/** What waits to be published: how many files (outputs and copies) and bytes, and how many failed for good in a run. */
export interface PublicationCounts {
  published: number;
  waiting: number;
  waitingBytes: number;
  failed: number;
  /** Of `published` and `waiting`, the web copies. */
  copiesPublished: number;
  copiesWaiting: number;
}

type KindStatements = ReturnType<typeof kindStatements>;

/** A kind's publication statements (outputs, or web copies): `row` names one of its rows. */
function kindStatements(db: Db, table: 'outputs' | 'derivatives', row: string) {
  return {
    published: db.prepare(
      `UPDATE ${table} SET published_at = @now, published_to = @url, publish_error = NULL
       WHERE ${row} AND sha256 = @sha256 AND published_at IS NULL`,
    ),
    failed: db.prepare(`UPDATE ${table} SET publish_error = @message WHERE ${row} AND published_at IS NULL`),
    clearFailures: db.prepare(
      `UPDATE ${table} SET publish_error = NULL WHERE publish_error IS NOT NULL AND published_at IS NULL`,
    ),
  };
}

/**
 * An output's second durable step when outputs go to a bucket: saved and
 * verified locally (its download, or a copy's making), then published,
 * verified in the bucket and recorded here. Each transition is guarded by
 * the bytes it was verified as, so a file saved again since is never taken
 * for the published one. Web copies live the same life in their own table.
 */
export class Publications {
  private readonly waitingStmt;
  /** Each kind's statements, written once: an output's row is named by its job and index, a copy's by its path too. */
  private readonly of: { output: KindStatements; copy: KindStatements };
  private readonly countsStmt;

  constructor(db: Db) {
    this.waitingStmt = db.prepare<[], UnpublishedRow>(
      `SELECT job_id, idx, item_id, path, bytes, sha256, content_type, copy FROM (
         SELECT job_id, idx, item_id, path, bytes, sha256, content_type, 0 AS copy, downloaded_at AS at FROM outputs
         WHERE published_at IS NULL AND sha256 IS NOT NULL AND path IS NOT NULL
         UNION ALL
         SELECT d.job_id, d.idx, o.item_id, d.path, d.bytes, d.sha256, NULL, 1, d.made_at
         FROM derivatives d JOIN outputs o ON o.job_id = d.job_id AND o.idx = d.idx
         WHERE d.published_at IS NULL)
       ORDER BY at, job_id, idx, copy, path`,
    );
    this.of = {
      output: kindStatements(db, 'outputs', 'job_id = @jobId AND idx = @idx'),
      copy: kindStatements(db, 'derivatives', 'job_id = @jobId AND idx = @idx AND path = @path'),
    };
    this.countsStmt = db.prepare<[], PublicationCounts>(
      `SELECT o.published + d.published AS published, o.waiting + d.waiting AS waiting,
              o.waitingBytes + d.waitingBytes AS waitingBytes, o.failed + d.failed AS failed, d.published AS copiesPublished, d.waiting AS copiesWaiting
       FROM (SELECT count(published_at) AS published,
                    count(*) FILTER (WHERE published_at IS NULL AND sha256 IS NOT NULL) AS waiting,
                    coalesce(sum(bytes) FILTER (WHERE published_at IS NULL AND sha256 IS NOT NULL), 0) AS waitingBytes,
                    count(publish_error) AS failed
             FROM outputs) o,
            (SELECT count(published_to) AS published,
                    count(*) FILTER (WHERE published_at IS NULL) AS waiting,
                    coalesce(sum(bytes) FILTER (WHERE published_at IS NULL), 0) AS waitingBytes,
                    count(publish_error) AS failed
             FROM derivatives) d`,
    );
  }

  /** Every output and copy saved and not yet published, oldest first (a resumed run publishes what the last one left). */
  waiting(): Unpublished[] {
    return this.waitingStmt.all().map((r) => ({
      itemId: r.item_id,
      jobId: r.job_id,
      output: r.idx,
      path: r.path,
      bytes: r.bytes,
      sha256: r.sha256,
      contentType: r.content_type,
      copy: r.copy === 1,
    }));
  }

  /** Verified in the bucket at `url`: true when recorded (false: saved again since, or recorded already). */
  published(
    out: Pick<Unpublished, 'jobId' | 'output' | 'sha256' | 'path' | 'copy'>,
    url: string,
    now: number,
  ): boolean {
    const row = { jobId: out.jobId, idx: out.output, sha256: out.sha256, url, now };
    if (out.copy) return this.of.copy.published.run({ ...row, path: out.path }).changes === 1;
    return this.of.output.published.run(row).changes === 1;
  }

  /** Not publishable in this run (its name is held by another object): kept locally, tried again by the next run. */
  failed(out: Pick<Unpublished, 'jobId' | 'output' | 'path' | 'copy'>, message: string): void {
    const row = { jobId: out.jobId, idx: out.output, message };
    if (out.copy) this.of.copy.failed.run({ ...row, path: out.path });
    else this.of.output.failed.run(row);
  }

  /** A new run tries again what an earlier one could not publish. */
  clearFailures(): void {
    this.of.output.clearFailures.run();
    this.of.copy.clearFailures.run();
  }

  counts(): PublicationCounts {
    return this.countsStmt.get()!;
  }
}
