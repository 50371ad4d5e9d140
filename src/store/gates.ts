import type { Db } from './db.js';
import type { Lifecycle } from './lifecycle.js';
import { shapePrices } from './shape-prices.js';
import type { ItemRow } from './items.js';
import type { ReviewRow } from './reviews.js';

/** A gate that items wait on: how many wait, and its own state and review. */
export interface GateRow {
  id: string;
  /** Items waiting on it (others of their gates may be undecided too). */
  waiting: number;
  state: string;
  review: string | null;
}

/** A waiting item as a price is looked up for it, with its gates (a JSON array). */
interface WaitingShape {
  id: string;
  type: string;
  model: string;
  resolution: string | null;
  duration: string | null;
  gates: string;
}

/** What waits for a decision (see Gates.decisions). */
export interface WaitingForDecisions {
  items: number;
  credits: number;
  unpriced: number;
  /** Each gate items wait on; `made`: its current version is made and undecided, so it can be decided now. */
  gates: { id: string; waiting: number; credits: number; made: boolean }[];
}

/** A gate whose made version waits for a person at most `timeoutMs` (the service's time) from `madeAt`. */
export interface TimedGate {
  id: string;
  version: number;
  madeAt: number;
  timeoutMs: number;
  onTimeout: 'skip' | 'approve';
}

/**
 * Gates (the manifest's `approved`): which items wait on which. An item
 * moves with its gates' state (the machine settles what a gate gates when
 * the gate is made or unmade) and with their decisions by `settle`, which
 * Decisions calls in each decision's transaction; `settleAll` settles items
 * that no gate moved since they were written (a sync, a retry).
 */
export class Gates {
  private readonly clearStmt;
  private readonly insertStmt;
  private readonly gatesOfStmt;
  private readonly skippedStmt;
  private readonly allGatesStmt;
  private readonly waitingStmt;
  private readonly gatesStmt;
  private readonly dependentsStmt;
  private readonly waitingShapesStmt;
  private readonly lastDecidedStmt;
  private readonly anyStmt;
  private readonly timeoutsStmt;
  private readonly decidedSinceStmt;
  private readonly unlockedStmt;
  private readonly madeStmt;

  constructor(
    private readonly db: Db,
    /** The item's moves: what a decision or a sync settles goes through them. */
    private readonly lifecycle: Lifecycle,
  ) {
    this.clearStmt = db.prepare('DELETE FROM gates');
    this.insertStmt = db.prepare('INSERT OR IGNORE INTO gates (item_id, gate_id) VALUES (?, ?)');
    this.allGatesStmt = db.prepare<[], string>('SELECT DISTINCT gate_id FROM gates').pluck();
    this.gatesOfStmt = db.prepare<[string], string>('SELECT gate_id FROM gates WHERE item_id = ?').pluck();
    this.skippedStmt = db.prepare<[], number>("SELECT count(*) FROM items WHERE state = 'skipped'").pluck();
    this.waitingStmt = db.prepare<[], ItemRow>(
      "SELECT * FROM items WHERE state = 'waiting' AND removed = 0 ORDER BY seq",
    );
    this.gatesStmt = db.prepare<[], GateRow>(
      `SELECT g.gate_id AS id, count(*) AS waiting, gi.state AS state, gi.review AS review
       FROM gates g JOIN items i ON i.id = g.item_id JOIN items gi ON gi.id = g.gate_id
       WHERE i.state = 'waiting' AND i.removed = 0 GROUP BY g.gate_id ORDER BY gi.seq`,
    );
    this.waitingShapesStmt = db.prepare<[], WaitingShape>(
      `SELECT i.id, i.type, i.model, i.spec ->> '$.resolution' AS resolution, i.spec ->> '$.duration' AS duration,
         (SELECT json_group_array(gate_id) FROM gates WHERE item_id = i.id) AS gates
       FROM items i WHERE i.state = 'waiting' AND i.removed = 0 ORDER BY i.seq`,
    );
    this.anyStmt = db.prepare<[], number>('SELECT 1 FROM gates LIMIT 1').pluck();
    this.timeoutsStmt = db.prepare<[], TimedGate>(
      `SELECT gi.id, o.version, o.downloaded_at AS madeAt, gi.spec ->> '$.approval.timeoutMs' AS timeoutMs,
         gi.spec ->> '$.approval.onTimeout' AS onTimeout
       FROM items gi JOIN outputs o ON o.item_id = gi.id AND o.idx = 1 AND o.superseded_at IS NULL AND o.sha256 IS NOT NULL
       WHERE gi.id IN (SELECT gate_id FROM gates) AND gi.state = 'done' AND gi.review = 'unreviewed' AND gi.removed = 0
         AND gi.spec -> '$.approval' IS NOT NULL`,
    );
    this.lastDecidedStmt = db.prepare<[], number>('SELECT coalesce(max(decided_at), 0) FROM reviews').pluck();
    this.decidedSinceStmt = db.prepare<[number], Pick<ReviewRow, 'item_id' | 'version' | 'decision' | 'decided_at'>>(
      `SELECT r.item_id, r.version, r.decision, r.decided_at FROM reviews r
       WHERE r.decided_at > ? AND EXISTS (SELECT 1 FROM gates g WHERE g.gate_id = r.item_id) ORDER BY r.decided_at`,
    );
    this.madeStmt = db
      .prepare<[string], number>("SELECT 1 FROM items WHERE id = ? AND state = 'done' AND review = 'unreviewed'")
      .pluck();
    this.unlockedStmt = db
      .prepare<[], number>(
        "SELECT count(*) FROM items i WHERE i.state = 'pending' AND i.removed = 0 AND EXISTS (SELECT 1 FROM gates g WHERE g.item_id = i.id)",
      )
      .pluck();
    this.dependentsStmt = db.prepare<[string], { id: string; state: string }>(
      // CROSS JOIN keeps the gate's few rows first: from the items' (removed, …) indexes, a 100,000-item state was read
      // whole for each decision (94 ms each).
      'SELECT i.id, i.state FROM gates g CROSS JOIN items i ON i.id = g.item_id WHERE g.gate_id = ? AND i.removed = 0 ORDER BY i.seq',
    );
  }

  /** The manifest's gates, written anew by a sync (within its transaction). */
  clear(): void {
    this.clearStmt.run();
  }

  add(itemId: string, gates: readonly string[]): void {
    for (const gate of gates) this.insertStmt.run(itemId, gate);
  }

  /**
   * Every gated item not sent goes where its gates put it (skipped, waiting
   * or pending), and an item skipped for an input that can be made again (a
   * gate made again, a rejection undone) comes back with it, however far down.
   */
  settleAll(): void {
    this.db.transaction(() => {
      for (let skipped = -1; skipped !== this.skippedStmt.get(); ) {
        skipped = this.skippedStmt.get()!;
        while (this.lifecycle.reviveSkipped().length > 0);
        this.settle(this.allGatesStmt.all());
      }
    })();
  }

  /**
   * After a decision (its gate's dependents settled): what was skipped for an input that can be made
   * again now comes back, however far down, each revived item settled on its own gates. Touches only those, not
   * every gate (a click in review on a catalog of 10,000 gates). Returns the items it brought back.
   */
  revive(): string[] {
    return this.db.transaction(() => {
      const all: string[] = [];
      for (let revived = this.lifecycle.reviveSkipped(); revived.length > 0; revived = this.lifecycle.reviveSkipped())
        for (const id of revived) {
          all.push(id);
          this.settle(this.gatesOfStmt.all(id));
        }
      return all;
    })();
  }

  /**
   * The items these gates gate, not sent, go where all their gates put them: after a decision on them (review,
   * approve, a timeout, the manifest's checks), and in a sync. Returns each item it wrote, with its state now.
   */
  settle(gateIds: Iterable<string>): { id: string; state: string }[] {
    const ids = [...gateIds];
    return ids.length ? this.lifecycle.settleGated(ids) : [];
  }

  /** Items waiting for a decision, in manifest order. */
  waitingItems(): ItemRow[] {
    return this.waitingStmt.all();
  }

  /** The gates items wait on, in manifest order, with how many wait on each. */
  waitedOn(): GateRow[] {
    return this.gatesStmt.all();
  }

  /**
   * What waits for a decision: how many items, what they would cost (each once; `unpriced` have no price the last
   * run knew), and each gate they wait on with its waiting items and their credits.
   */
  decisions(): WaitingForDecisions {
    const priceOf = shapePrices(this.db);
    const gates = new Map<string, { id: string; waiting: number; credits: number; made: boolean }>();
    let credits = 0;
    let unpriced = 0;
    const waiting = this.waitingShapes();
    for (const item of waiting) {
      const price = priceOf(item);
      if (price === undefined) unpriced++;
      else credits += price;
      for (const id of item.gates) {
        let gate = gates.get(id);
        if (!gate) gates.set(id, (gate = { id, waiting: 0, credits: 0, made: this.madeStmt.get(id) !== undefined }));
        gate.waiting++;
        gate.credits += price ?? 0;
      }
    }
    return { items: waiting.length, credits, unpriced, gates: [...gates.values()] };
  }

  /** Each waiting item's shape (what prices it) and its gates. */
  waitingShapes(): {
    id: string;
    type: string;
    model: string;
    resolution: string | null;
    duration: string | null;
    gates: string[];
  }[] {
    return this.waitingShapesStmt.all().map((row) => ({ ...row, gates: JSON.parse(row.gates) as string[] }));
  }

  /** The gates made and undecided that have an approval timeout: when each was made, and what the timeout decides. */
  withTimeouts(): TimedGate[] {
    return this.timeoutsStmt.all();
  }

  /** Whether the manifest has any gate. */
  any(): boolean {
    return this.anyStmt.get() !== undefined;
  }

  /** When the last decision was recorded, by any process. */
  lastDecidedAt(): number {
    return this.lastDecidedStmt.get() ?? 0;
  }

  /** Decisions on gates recorded after `since`, oldest first. */
  decidedSince(since: number): Pick<ReviewRow, 'item_id' | 'version' | 'decision' | 'decided_at'>[] {
    return this.decidedSinceStmt.all(since);
  }

  /** Gated items let go by their gates' approval and not yet sent (pending). */
  unlocked(): number {
    return this.unlockedStmt.get()!;
  }

  /** The items this gate gates, with their states. */
  dependents(gateId: string): { id: string; state: string }[] {
    return this.dependentsStmt.all(gateId);
  }
}
