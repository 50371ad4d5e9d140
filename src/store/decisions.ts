import type { Db } from './db.js';
import type { Gates } from './gates.js';
import type { Items } from './items.js';
import type { ReviewDecision, Reviews } from './reviews.js';
import { shapePrices } from './shape-prices.js';

/** What a decision is: on one version of an item's outputs; `decision: null` clears the one there (undo). */
export interface DecisionAsked {
  itemId: string;
  version: number;
  decision: ReviewDecision | null;
  /** Kept with the decision; undefined keeps the note the version had. */
  note?: string | null | undefined;
  /** Who decided: a person's name; a timeout's decision is by "timeout". */
  by: string;
  now: number;
}

/** A dependent already sent before a decision that would have held it back: what it spent. */
export interface SentBefore {
  id: string;
  credits: number;
}

/** What a decision brought about, as the record keeps it. */
export interface DecisionEffect {
  itemId: string;
  version: number;
  decision: ReviewDecision | 'cleared';
  /** Let go to be sent (they were waiting or skipped). */
  unlocked: string[];
  /** Skipped without ever having been let go. */
  skipped: string[];
  /** Let go and not yet sent (pending or queued): held back again, unpaid. */
  takenBack: string[];
  /** Sent before the decision: never undone. */
  sentBefore: SentBefore[];
  /** The credits of each list, as the last run priced them (sentBefore: what was charged). */
  credits: { unlocked: number; skipped: number; takenBack: number; sentBefore: number };
}

/** One entry of the decision record. */
export interface DecisionEntry extends DecisionEffect {
  note: string | null;
  by: string;
  at: number;
  byTimeout: boolean;
}

/** Why a decision was not recorded. */
export type DecisionRefusal =
  | { refused: 'unknown' }
  | { refused: 'not-made'; state: string }
  | { refused: 'superseded'; current: number };

interface EntryRow {
  item_id: string;
  version: number;
  decision: DecisionEntry['decision'];
  note: string | null;
  by: string;
  at: number;
  by_timeout: number;
  unlocked: string;
  skipped: string;
  taken_back: string;
  sent_before: string;
  credits: string;
}

/** Not sent: a decision may still hold these back. */
const UNSENT = new Set(['pending', 'queued']);
const HELD = new Set(['waiting', 'skipped']);

/**
 * Decisions: one call records a decision on an item's current version and
 * what it brings about. In one transaction the version's decision is written
 * (its dependents move with it: migration 28's trigger), what was skipped for
 * a rejection now undone comes back, and the record gets an entry that names
 * what was unlocked, skipped, taken back or already sent. The CLI, review and
 * a run's approval timeouts all decide through here.
 */
export class Decisions {
  private readonly insertStmt;
  private readonly listStmt;
  private readonly latestStmt;
  private readonly spentStmt;
  private readonly countStmt;

  constructor(
    private readonly db: Db,
    private readonly reviews: Reviews,
    private readonly gates: Gates,
    private readonly items: Items,
  ) {
    this.insertStmt = db.prepare(
      `INSERT INTO decisions (item_id, version, decision, note, by, at, by_timeout, unlocked, skipped, taken_back,
         sent_before, credits)
       VALUES (@itemId, @version, @decision, @note, @by, @at, @byTimeout, @unlocked, @skipped, @takenBack,
         @sentBefore, @credits)`,
    );
    this.listStmt = db.prepare<[number, number], EntryRow>(
      'SELECT * FROM decisions ORDER BY seq DESC LIMIT ? OFFSET ?',
    );
    this.latestStmt = db.prepare<[string, number], EntryRow>(
      'SELECT * FROM decisions WHERE item_id = ? AND version = ? ORDER BY seq DESC LIMIT 1',
    );
    this.spentStmt = db
      .prepare<[string], number>('SELECT coalesce(sum(charged - refunded), 0) FROM attempts WHERE item_id = ?')
      .pluck();
    this.countStmt = db.prepare<[], number>('SELECT count(*) FROM decisions').pluck();
  }

  /** Whether a decision may be recorded on this version now, or why not. */
  refusal(itemId: string, version: number): DecisionRefusal | undefined {
    const item = this.items.get(itemId);
    if (!item) return { refused: 'unknown' };
    const current = this.reviews.current(itemId);
    if (current && current.version !== version) return { refused: 'superseded', current: current.version };
    if (item.state !== 'done' || !current || current.verified < current.outputs)
      return { refused: 'not-made', state: item.state };
    return undefined;
  }

  /** Records a person's decision and what it brought about, or says why it was not recorded (nothing written). */
  decide(asked: DecisionAsked): DecisionEntry | DecisionRefusal {
    return this.db.transaction((): DecisionEntry | DecisionRefusal => {
      const refusal = this.refusal(asked.itemId, asked.version);
      if (refusal) return refusal;
      const entry = this.moving(asked.itemId, asked.decision !== 'approved', () =>
        this.reviews.decide(asked.itemId, asked.version, asked.decision, asked.note, asked.now),
      );
      const note = asked.note === undefined ? (this.reviews.noteOf(asked.itemId, asked.version) ?? null) : asked.note;
      return this.record(asked, entry!, note, false);
    })();
  }

  /**
   * A gate's approval timeout takes its decision on a made version no one
   * decided: recorded as the timeout's. Undefined when a decision is there
   * already (a person's is never overridden).
   */
  decideByTimeout(itemId: string, version: number, decision: ReviewDecision, note: string, now: number) {
    return this.db.transaction((): DecisionEntry | undefined => {
      const entry = this.moving(itemId, decision !== 'approved', () =>
        this.reviews.decideByTimeout(itemId, version, decision, note, now),
      );
      if (!entry) return undefined;
      return this.record({ itemId, version, decision, note, by: 'timeout', now }, entry, note, true);
    })();
  }

  /** The record, newest first. */
  list(limit = Number.MAX_SAFE_INTEGER, offset = 0): DecisionEntry[] {
    return this.listStmt.all(limit, offset).map(entryOf);
  }

  /** How many decisions the record holds. */
  count(): number {
    return this.countStmt.get()!;
  }

  /** The last decision recorded on a version, if any. */
  latest(itemId: string, version: number): DecisionEntry | undefined {
    const row = this.latestStmt.get(itemId, version);
    return row && entryOf(row);
  }

  /**
   * Runs `write` and says what it moved among the gate's dependents; undefined when `write` wrote nothing. A
   * decision that `holdsBack` (a rejection, a clear) also names the dependents it came too late for.
   */
  private moving(
    gateId: string,
    holdsBack: boolean,
    write: () => boolean,
  ): Omit<DecisionEffect, 'itemId' | 'version' | 'decision'> | undefined {
    const before = new Map(this.gates.dependents(gateId).map((d) => [d.id, d.state]));
    if (!write()) return undefined;
    // What was skipped for a rejection now undone comes back, however far down.
    for (const id of this.gates.revive()) if (!before.has(id)) before.set(id, 'skipped');
    const after = new Map(this.gates.dependents(gateId).map((d) => [d.id, d.state]));
    for (const id of before.keys()) if (!after.has(id)) after.set(id, this.items.get(id)?.state ?? 'skipped');
    const unlocked: string[] = [];
    const skipped: string[] = [];
    const takenBack: string[] = [];
    const sentBefore: SentBefore[] = [];
    for (const [id, was] of before) {
      const now = after.get(id)!;
      if (HELD.has(was) && UNSENT.has(now)) unlocked.push(id);
      else if (UNSENT.has(was) && HELD.has(now)) takenBack.push(id);
      else if (was !== 'skipped' && now === 'skipped') skipped.push(id);
    }
    if (holdsBack)
      for (const [id, state] of after)
        if (!UNSENT.has(state) && !HELD.has(state)) sentBefore.push({ id, credits: this.spentStmt.get(id) ?? 0 });
    const price = this.pricer();
    const sum = (ids: string[]) => ids.reduce((s, id) => s + (price(id) ?? 0), 0);
    return {
      unlocked,
      skipped,
      takenBack,
      sentBefore,
      credits: {
        unlocked: sum(unlocked),
        skipped: sum(skipped),
        takenBack: sum(takenBack),
        sentBefore: sentBefore.reduce((s, d) => s + d.credits, 0),
      },
    };
  }

  private record(
    asked: DecisionAsked,
    effect: Omit<DecisionEffect, 'itemId' | 'version' | 'decision'>,
    note: string | null,
    byTimeout: boolean,
  ): DecisionEntry {
    const entry: DecisionEntry = {
      itemId: asked.itemId,
      version: asked.version,
      decision: asked.decision ?? 'cleared',
      ...effect,
      note,
      by: asked.by,
      at: asked.now,
      byTimeout,
    };
    this.insertStmt.run({
      itemId: entry.itemId,
      version: entry.version,
      decision: entry.decision,
      note,
      by: entry.by,
      at: entry.at,
      byTimeout: byTimeout ? 1 : 0,
      unlocked: JSON.stringify(entry.unlocked),
      skipped: JSON.stringify(entry.skipped),
      takenBack: JSON.stringify(entry.takenBack),
      sentBefore: JSON.stringify(entry.sentBefore),
      credits: JSON.stringify(entry.credits),
    });
    return entry;
  }

  /** An item's price as the last run priced its shape. */
  private pricer(): (id: string) => number | undefined {
    const priceOf = shapePrices(this.db);
    return (id) => {
      const item = this.items.get(id);
      if (!item) return undefined;
      const spec = JSON.parse(item.spec) as { resolution?: string; duration?: number | string };
      return priceOf({
        type: item.type,
        model: item.model,
        resolution: spec.resolution ?? null,
        duration: spec.duration === undefined ? null : String(spec.duration),
      });
    };
  }
}

function entryOf(row: EntryRow): DecisionEntry {
  return {
    itemId: row.item_id,
    version: row.version,
    decision: row.decision,
    unlocked: JSON.parse(row.unlocked) as string[],
    skipped: JSON.parse(row.skipped) as string[],
    takenBack: JSON.parse(row.taken_back) as string[],
    sentBefore: JSON.parse(row.sent_before) as SentBefore[],
    credits: { unlocked: 0, skipped: 0, takenBack: 0, sentBefore: 0, ...(JSON.parse(row.credits) as object) },
    note: row.note,
    by: row.by,
    at: row.at,
    byTimeout: row.by_timeout === 1,
  };
}
