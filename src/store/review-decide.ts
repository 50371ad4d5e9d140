import type { Db } from './db.js';

/**
 * What approving a gate would unlock now: the items waiting on it whose other gates are approved, and their credits
 * as the last run priced them; `upTo`: the whole chain behind it (each item once, however deep), what it may spend
 * with the approvals after this one.
 */
export interface Unlocks {
  items: number;
  credits: number;
  upTo?: { items: number; credits: number };
}

/** The waiting items' prices, from the shapes the last run priced (see shape-prices.ts). */
const PRICES = `prices AS (
  SELECT value ->> 'type' AS type, value ->> 'model' AS model, value ->> 'resolution' AS resolution,
    value ->> 'duration' AS duration, value ->> 'credits' AS credits
  FROM json_each(coalesce((SELECT value FROM meta WHERE key = 'shape_prices'), '[]')))`;

/** A waiting item this gate alone holds back: every other gate of it is made and approved. */
const ALONE = `NOT EXISTS (SELECT 1 FROM gates o JOIN items oi ON oi.id = o.gate_id
  WHERE o.item_id = d.id AND o.gate_id <> g.gate_id AND (oi.state IS NOT 'done' OR oi.review IS NOT 'approved'))`;

/**
 * Per gate made and undecided: the items waiting on it and their credits (`gates` narrows the gates looked at).
 * From the gates, each item then found by its id (CROSS JOIN keeps that order: from the items' indexes instead, a
 * 100,000-item state took minutes); the prices once, materialized.
 */
const unlocksSql = (gates: string) => `WITH ${PRICES.replace('prices AS (', 'prices AS MATERIALIZED (')},
  pairs AS (
    SELECT g.gate_id AS id, gi.seq AS seq, ${ALONE} AS alone, p.credits AS credits,
      EXISTS (SELECT 1 FROM gates x WHERE x.gate_id = d.id) AS deeper
    FROM gates g
      CROSS JOIN items gi ON gi.id = g.gate_id
      CROSS JOIN items d ON d.id = g.item_id
      LEFT JOIN prices p ON p.type = d.type AND p.model = d.model
        AND p.resolution IS (d.spec ->> '$.resolution') AND p.duration IS (d.spec ->> '$.duration')
    WHERE ${gates} AND gi.state = 'done' AND gi.review = 'unreviewed' AND gi.removed = 0
      AND d.state = 'waiting' AND d.removed = 0)
  SELECT id, sum(alone) AS items, coalesce(sum(CASE WHEN alone THEN credits END), 0) AS credits,
    count(*) AS waiting, coalesce(sum(credits), 0) AS waitingCredits, max(deeper) AS deeper, min(seq) AS seq
  FROM pairs GROUP BY id`;

/**
 * The chain behind a gate (CROSS JOIN keeps the chain first: from the items' state index instead, every waiting item
 * of a catalog was read for each card, 9 ms a gate at 100,000 items): every waiting item that waits on it, or on an item that does, however deep (each once),
 * and what the chain would spend once every gate in it is approved.
 */
const CHAIN = `WITH RECURSIVE ${PRICES},
  chain(id) AS (SELECT item_id FROM gates WHERE gate_id = ? UNION SELECT g.item_id FROM gates g JOIN chain c ON g.gate_id = c.id)
  SELECT count(*) AS items, coalesce(sum(p.credits), 0) AS credits
  FROM chain c CROSS JOIN items d ON d.id = c.id
    LEFT JOIN prices p ON p.type = d.type AND p.model = d.model
      AND p.resolution IS (d.spec ->> '$.resolution') AND p.duration IS (d.spec ->> '$.duration')
  WHERE d.state = 'waiting' AND d.removed = 0`;

/**
 * What the list depends on, cheap to read (a few ms at 100,000 items): how many wait, how many outputs are
 * undecided, and the decisions. A run's other commits (its polls, its other items) leave it as it is.
 */
const SIGNATURE = `SELECT (SELECT coalesce(sum(n), 0) FROM item_tally WHERE state = 'waiting') || ':' ||
  (SELECT count(*) FROM items WHERE removed = 0 AND review = 'unreviewed') || ':' ||
  (SELECT count(*) || ':' || coalesce(max(decided_at), 0) FROM reviews) AS signature`;

/**
 * The review's decide filter: the gates items wait on that can be decided
 * now (made, undecided), most credits unlocked first; and what approving a
 * card's item would unlock. The list is read again only when what it
 * depends on changed (see SIGNATURE), not at each of a run's commits.
 */
export class DecideQueries {
  private readonly listStmt;
  private readonly ofStmt;
  private readonly signatureStmt;
  private readonly chainStmt;
  private kept: { signature: string; rows: (Unlocks & { id: string })[] } | undefined;

  constructor(db: Db) {
    this.signatureStmt = db.prepare<[], string>(SIGNATURE).pluck();
    this.chainStmt = db.prepare<[string], { items: number; credits: number }>(CHAIN);
    this.listStmt = db.prepare<[], Unlocks & { id: string }>(
      `${unlocksSql('1')} ORDER BY credits DESC, items DESC, seq`,
    );
    this.ofStmt = db.prepare<
      [string],
      Unlocks & { id: string; waiting: number; waitingCredits: number; deeper: number }
    >(unlocksSql('g.gate_id IN (SELECT value FROM json_each(?))'));
  }

  /** The gates to decide, most credits unlocked first. */
  list(): (Unlocks & { id: string })[] {
    const signature = this.signatureStmt.get()!;
    if (this.kept?.signature !== signature) this.kept = { signature, rows: this.listStmt.all() };
    return this.kept.rows;
  }

  /** What approving each of these items would unlock now, and up to what its chain may spend, for gates to decide. */
  unlocksOf(ids: readonly string[]): Map<string, Unlocks> {
    if (ids.length === 0) return new Map();
    // The chain goes deeper only where an item waiting on the gate is a gate itself: else it is what waits on it.
    return new Map(
      this.ofStmt
        .all(JSON.stringify(ids))
        .map(({ id, items, credits, waiting, waitingCredits, deeper }) => [
          id,
          { items, credits, upTo: deeper ? this.chain(id) : { items: waiting, credits: waitingCredits } },
        ]),
    );
  }

  /** The chain behind a gate: its waiting items however deep, each once, and their credits. */
  chain(gateId: string): { items: number; credits: number } {
    return this.chainStmt.get(gateId)!;
  }
}
