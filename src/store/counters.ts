import type { Db } from './db.js';

/**
 * The counts runs keep in the state, by name: the runner adds them, `genbatch
 * metrics` serves them. One list both sides import, so a name misspelt on
 * either side is a compile error, not a figure silently dropped.
 */
export const COUNTER_NAMES = [
  'submissions',
  'rate_limited',
  'download_failures',
  'publish_failures',
  'stalls',
  'outage_seconds',
  'bucket_outage_seconds',
  'stalled_transfer_seconds',
] as const;
export type CounterName = (typeof COUNTER_NAMES)[number];

/** One count to add: its name, the key it is of ('' for none), a label ('' for none), and how much. */
export interface CounterDelta {
  name: CounterName;
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
