import type { Db } from './db.js';

/** What `genbatch metrics` reads of the state at each scrape: a few rows each, kept by triggers (migration 23). */
export class MetricsQueries {
  private readonly creditsByKeyStmt;
  private readonly creditsByTagStmt;
  private readonly jobSecondsStmt;
  private readonly downloadsStmt;
  private readonly keyDayStmt;

  constructor(db: Db) {
    this.creditsByKeyStmt = db.prepare<[], { key_fp: string; charged: number; refunded: number }>(
      'SELECT key_fp, charged, refunded FROM key_credits ORDER BY key_fp',
    );
    this.creditsByTagStmt = db.prepare<[], { tag: string; charged: number; refunded: number }>(
      'SELECT tag, charged, refunded FROM tag_credits ORDER BY tag',
    );
    this.jobSecondsStmt = db.prepare<[], { type: string; le: number; n: number; sum: number }>(
      'SELECT type, le, n, sum FROM job_seconds ORDER BY type, le',
    );
    this.downloadsStmt = db.prepare<[], { n: number; bytes: number | null }>(
      'SELECT count(*) AS n, sum(bytes) AS bytes FROM outputs WHERE downloaded_at IS NOT NULL',
    );
    this.keyDayStmt = db.prepare<[number], { key_fp: string; charged: number }>(
      'SELECT key_fp, charged FROM key_day_credits WHERE day = ? ORDER BY key_fp',
    );
  }

  /** Credits charged and refunded per key ('' for attempts made before keys were recorded). */
  creditsByKey(): { key_fp: string; charged: number; refunded: number }[] {
    return this.creditsByKeyStmt.all();
  }

  /** Credits charged and refunded for the items of each tag, as they were tagged when charged. */
  creditsByTag(): { tag: string; charged: number; refunded: number }[] {
    return this.creditsByTagStmt.all();
  }

  /** Ended jobs per type, filed under the first bucket bound (seconds) their run time fits: how many, and their sum. */
  jobSeconds(): { type: string; le: number; n: number; sum: number }[] {
    return this.jobSecondsStmt.all();
  }

  /** Outputs downloaded and verified, and their bytes. */
  downloads(): { count: number; bytes: number } {
    const row = this.downloadsStmt.get();
    return { count: row?.n ?? 0, bytes: row?.bytes ?? 0 };
  }

  /** Credits charged per key in one key day. */
  keyDay(day: number): { key_fp: string; charged: number }[] {
    return this.keyDayStmt.all(day);
  }
}
