import type { Db } from './db.js';

/** Totals kept at most (searches typed are many): then they start over. */
const KEPT_MAX = 1_000;

/**
 * How many items each filter matched, as counted, while the state is unchanged: another connection's commit (the
 * run's: SQLite's data version) or a write of this one (a decision) forgets them all. A count needs a whole range
 * of an index, a slice only its first entries.
 */
export class KeptTotals {
  private readonly totals = new Map<string, number>();
  private counted = { version: -1, changes: -1 };
  private readonly changesStmt;

  constructor(private readonly db: Db) {
    this.changesStmt = db.prepare<[], number>('SELECT total_changes()').pluck();
  }

  /** The total counted for `key`, if the state is as it was then. */
  get(key: string): number | undefined {
    const now = { version: this.db.pragma('data_version', { simple: true }) as number, changes: this.changes() };
    if (now.version !== this.counted.version || now.changes !== this.counted.changes) {
      this.totals.clear();
      this.counted = now;
    }
    return this.totals.get(key);
  }

  /** Kept after `get` found none: the state it was counted in is the one `get` saw. */
  set(key: string, total: number): void {
    if (this.totals.size >= KEPT_MAX) this.totals.clear();
    this.totals.set(key, total);
  }

  /** A write of this connection that changes nothing counted (a search's matches kept in a temporary table). */
  unchanged(write: () => void): void {
    const before = this.changes();
    write();
    if (this.counted.changes === before) this.counted.changes = this.changes();
  }

  private changes(): number {
    return this.changesStmt.get()!;
  }
}
