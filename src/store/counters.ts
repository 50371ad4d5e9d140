import type { Db } from './db.js';

/** One count to add: its name, the key it is of ('' for none), a label ('' for none), and how much. */
export interface CounterDelta {
  name: string;
  keyFp: string;
  label: string;
  value: number;
}

/** Counts a run adds up as it goes (submissions, 429s, failures, seconds of outages), kept across runs. */
export class Counters {
  private readonly addStmt;
  private readonly allStmt;

  constructor(private readonly db: Db) {
    this.addStmt = db.prepare(
      'INSERT INTO counters (name, key_fp, label, value) VALUES (@name, @keyFp, @label, @value) ON CONFLICT DO UPDATE SET value = value + excluded.value',
    );
    this.allStmt = db.prepare<[], { name: string; key_fp: string; label: string; value: number }>(
      'SELECT name, key_fp, label, value FROM counters ORDER BY name, key_fp, label',
    );
  }

  /** Adds them all in one transaction. */
  add(deltas: readonly CounterDelta[]): void {
    if (deltas.length === 0) return;
    this.db.transaction(() => {
      for (const d of deltas) this.addStmt.run(d);
    })();
  }

  all(): { name: string; key_fp: string; label: string; value: number }[] {
    return this.allStmt.all();
  }
}
