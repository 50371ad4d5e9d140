import type { Db } from './db.js';

/** What approving a gate would unlock: the items waiting on it, and their credits as the last run priced them. */
export interface Unlocks {
  items: number;
  credits: number;
}

/** The waiting items' prices, from the shapes the last run priced (see shape-prices.ts). */
const PRICES = `prices AS (
  SELECT value ->> 'type' AS type, value ->> 'model' AS model, value ->> 'resolution' AS resolution,
    value ->> 'duration' AS duration, value ->> 'credits' AS credits
  FROM json_each(coalesce((SELECT value FROM meta WHERE key = 'shape_prices'), '[]')))`;

/** Per gate made and undecided: the items waiting on it and their credits (`gates` narrows the gates looked at). */
const unlocksSql = (gates: string) => `WITH ${PRICES}
  SELECT g.gate_id AS id, count(*) AS items, coalesce(sum(p.credits), 0) AS credits
  FROM gates g
    JOIN items gi ON gi.id = g.gate_id AND gi.state = 'done' AND gi.review = 'unreviewed' AND gi.removed = 0
    JOIN items d ON d.id = g.item_id AND d.state = 'waiting' AND d.removed = 0
    LEFT JOIN prices p ON p.type = d.type AND p.model = d.model
      AND p.resolution IS (d.spec ->> '$.resolution') AND p.duration IS (d.spec ->> '$.duration')
  WHERE ${gates}
  GROUP BY g.gate_id`;

/**
 * The review's decide filter: the gates items wait on that can be decided
 * now (made, undecided), most credits unlocked first; and what approving a
 * card's item would unlock. The list is read once while the state is
 * unchanged: a run's every commit changes it, a reviewer's scrolling does not.
 */
export class DecideQueries {
  private readonly listStmt;
  private readonly ofStmt;
  private kept: { version: string; rows: (Unlocks & { id: string })[] } | undefined;

  constructor(
    db: Db,
    /** Changes whenever anything was committed, by this connection or another. */
    private readonly version: () => string,
  ) {
    this.listStmt = db.prepare<[], Unlocks & { id: string }>(
      `${unlocksSql('1')} ORDER BY credits DESC, items DESC, min(gi.seq)`,
    );
    this.ofStmt = db.prepare<[string], Unlocks & { id: string }>(
      unlocksSql('g.gate_id IN (SELECT value FROM json_each(?))'),
    );
  }

  /** The gates to decide, most credits unlocked first. */
  list(): (Unlocks & { id: string })[] {
    const version = this.version();
    if (this.kept?.version !== version) this.kept = { version, rows: this.listStmt.all() };
    return this.kept.rows;
  }

  /** What approving each of these items would unlock, for those that are gates to decide. */
  unlocksOf(ids: readonly string[]): Map<string, Unlocks> {
    if (ids.length === 0) return new Map();
    return new Map(this.ofStmt.all(JSON.stringify(ids)).map(({ id, items, credits }) => [id, { items, credits }]));
  }
}
