import type { Db } from './db.js';
import type { Gates } from './gates.js';
import type { Items } from './items.js';
import type { ReviewDecision, Reviews } from './reviews.js';
import { shapePrices, type PriceShape } from './shape-prices.js';

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

/** An item's state and its current version: how many outputs it has, and how many are verified. */
interface ItemVersion {
  state: string;
  version: number | null;
  outputs: number;
  verified: number;
}

/** Why a decision on `version` of this item (undefined: no such item) is not recorded now, if it is not. */
function refusalOf(item: ItemVersion | undefined, version: number): DecisionRefusal | undefined {
  if (!item) return { refused: 'unknown' };
  // An earlier version than the current one is superseded; a later one is not made (yet).
  if (item.version !== null && version < item.version) return { refused: 'superseded', current: item.version };
  if (item.version !== null && version > item.version) return { refused: 'not-made', state: item.state };
  if (item.state !== 'done' || item.version === null || item.verified < item.outputs)
    return { refused: 'not-made', state: item.state };
  return undefined;
}

/** Not sent: a decision may still hold these back. */
const UNSENT = new Set(['pending', 'queued']);
const HELD = new Set(['waiting', 'skipped']);

/**
 * Decisions: one call records a decision on an item's current version and
 * what it brings about. In one transaction the version's decision is written,
 * what it gates moves with it (the machine's settle), what was skipped for a
 * rejection now undone comes back, and the record gets an entry that names
 * what was unlocked, skipped, taken back or already sent. The CLI, review, a
 * run's approval timeouts and the manifest's checks all decide through here.
 */
export class Decisions {
  private readonly insertStmt;
  private readonly listStmt;
  private readonly latestStmt;
  private readonly spentStmt;
  private readonly countStmt;
  private readonly dependentsStmt;
  private readonly versionStmt;
  private readonly versionsStmt;
  private readonly ancestorsStmt;
  /** What prices each dependent the last look read: a bulk decision prices them without reading each again. */
  private readonly shapes = new Map<string, PriceShape>();

  constructor(
    private readonly db: Db,
    private readonly reviews: Reviews,
    private readonly gates: Gates,
    private readonly items: Items,
  ) {
    // Entries as a JSON array, in their order (seq follows it).
    this.insertStmt = db.prepare<[string]>(
      `INSERT INTO decisions (item_id, version, decision, note, by, at, by_timeout, unlocked, skipped, taken_back,
         sent_before, credits)
       SELECT value ->> 'i', value ->> 'v', value ->> 'd', value ->> 'n', value ->> 'b', value ->> 'a', value ->> 't',
         value -> 'u', value -> 's', value -> 'k', value -> 'f', value -> 'c'
       FROM json_each(?) ORDER BY key`,
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
    // The gates' few rows first (CROSS JOIN), each dependent then found by its id, with what prices it.
    // The spec read once for both fields: `shape` is [resolution, duration] (two reads of it took 260 ms, not 147,
    // for a bulk decision's 30,000 dependents).
    this.dependentsStmt = db.prepare<
      [string],
      { gate: string; id: string; state: string; type: string; model: string; shape: string }
    >(
      `SELECT g.gate_id AS gate, i.id, i.state, i.type, i.model,
         json_extract(i.spec, '$.resolution', '$.duration') AS shape
       FROM json_each(?) j CROSS JOIN gates g ON g.gate_id = j.value CROSS JOIN items i ON i.id = g.item_id
       WHERE i.removed = 0`,
    );
    // The same for many items (a JSON array), each row keyed by its place in the array.
    this.versionsStmt = db.prepare<[string], ItemVersion & { k: number }>(
      `WITH t AS (SELECT j.key AS k, j.value AS id,
           (SELECT max(version) FROM outputs WHERE item_id = j.value AND superseded_at IS NULL) AS version
         FROM json_each(?) j)
       SELECT t.k, i.state, t.version,
         (SELECT count(*) FROM outputs WHERE item_id = t.id AND version = t.version AND superseded_at IS NULL) AS outputs,
         (SELECT count(sha256) FROM outputs WHERE item_id = t.id AND version = t.version AND superseded_at IS NULL)
           AS verified
       FROM t CROSS JOIN items i ON i.id = t.id`,
    );
    // What an item is made from or waits on, however far up: a revived item's decided gate among them.
    this.ancestorsStmt = db
      .prepare<[string], string>(
        `WITH RECURSIVE up(id) AS (SELECT ?
           UNION SELECT d.dep_id FROM up CROSS JOIN deps d ON d.item_id = up.id
           UNION SELECT g.gate_id FROM up CROSS JOIN gates g ON g.item_id = up.id)
         SELECT id FROM up`,
      )
      .pluck();
    // An item's state and its current version (outputs not superseded): made, and how many outputs are verified.
    this.versionStmt = db.prepare<[{ id: string }], ItemVersion>(
      `SELECT i.state, o.version, coalesce(o.outputs, 0) AS outputs, coalesce(o.verified, 0) AS verified
       FROM items i LEFT JOIN (SELECT version, count(*) AS outputs, count(sha256) AS verified FROM outputs
         WHERE item_id = @id AND superseded_at IS NULL GROUP BY version ORDER BY version DESC LIMIT 1) o
       WHERE i.id = @id`,
    );
  }

  /** Whether a decision may be recorded on this version now, or why not. */
  refusal(itemId: string, version: number): DecisionRefusal | undefined {
    return refusalOf(this.versionStmt.get({ id: itemId }), version);
  }

  /** `refusal` for many items, read in one statement. */
  private refusals(asked: readonly DecisionAsked[]): (DecisionRefusal | undefined)[] {
    const rows = new Map(this.versionsStmt.all(JSON.stringify(asked.map((a) => a.itemId))).map((r) => [r.k, r]));
    return asked.map((a, i) => refusalOf(rows.get(i), a.version));
  }

  /** Records a person's decision and what it brought about, or says why it was not recorded (nothing written). */
  decide(asked: DecisionAsked): DecisionEntry | DecisionRefusal {
    return this.decideAll([asked])[0]!;
  }

  /**
   * Records many decisions in one transaction (a selection in review, approve with many ids): each refused one says
   * why and writes nothing, the others are written, then what they gate moves once, in one statement, for all of
   * them (a bulk approval of 10,000 gates, not 10,000 settlings), and each gets its entry in the record.
   */
  decideAll(asked: readonly DecisionAsked[]): (DecisionEntry | DecisionRefusal)[] {
    return this.db.transaction(() => {
      const refusals = this.refusals(asked);
      const taken = asked.filter((_, i) => !refusals[i]);
      const gateIds = [...new Set(taken.map((a) => a.itemId))];
      const before = this.dependentsOf(gateIds);
      // Written one statement for each kind of decision asked (a bulk decision is one kind, one note).
      const kinds = new Map<string, DecisionAsked[]>();
      for (const a of taken) {
        const kind = JSON.stringify([a.decision, a.note === undefined ? { keep: true } : a.note, a.now]);
        const same = kinds.get(kind);
        if (same) same.push(a);
        else kinds.set(kind, [a]);
      }
      for (const same of kinds.values())
        this.reviews.decideMany(
          same.map((a) => [a.itemId, a.version] as const),
          same[0]!.decision,
          same[0]!.note,
          same[0]!.now,
        );
      const { moved, revived } = this.follow(gateIds);
      this.attributeRevived(before, revived);
      // After: as before, but for what the settling wrote, and what came back (read again: it settled on its gates).
      const after = new Map(
        [...before].map(([gate, deps]) => [gate, new Map([...deps].map(([id, was]) => [id, moved.get(id) ?? was]))]),
      );
      for (const id of revived) {
        const state = this.items.get(id)?.state;
        if (state) for (const deps of after.values()) if (deps.has(id)) deps.set(id, state);
      }
      const price = this.pricer();
      const out = asked.map((a, i) => {
        const refusal = refusals[i];
        if (refusal) return refusal;
        const effect = this.effect(before.get(a.itemId), after.get(a.itemId), a.decision !== 'approved', price);
        const note = a.note === undefined ? (this.reviews.noteOf(a.itemId, a.version) ?? null) : a.note;
        return this.entry(a, effect, note, false);
      });
      this.recordAll(out.filter((e): e is DecisionEntry => !('refused' in e)));
      return out;
    })();
  }

  /**
   * A gate's approval timeout takes its decision on a made version no one
   * decided: recorded as the timeout's. Undefined when a decision is there
   * already (a person's is never overridden).
   */
  decideByTimeout(itemId: string, version: number, decision: ReviewDecision, note: string, now: number) {
    return this.db.transaction((): DecisionEntry | undefined => {
      const before = this.dependentsOf([itemId]);
      if (!this.reviews.decideByTimeout(itemId, version, decision, note, now)) return undefined;
      for (const id of this.follow([itemId]).revived) before.get(itemId)!.set(id, 'skipped');
      const after = this.dependentsOf([itemId]);
      const effect = this.effect(before.get(itemId), after.get(itemId), decision !== 'approved', this.pricer());
      const entry = this.entry({ itemId, version, decision, note, by: 'timeout', now }, effect, note, true);
      this.recordAll([entry]);
      return entry;
    })();
  }

  /**
   * The manifest's checks reject a made version (`reason` says why), unless a decision is there already, and what it
   * gates moves with it: true when taken. A check is no person's decision: the record keeps people's and timeouts'.
   */
  rejectByCheck(itemId: string, version: number, reason: string, now: number): boolean {
    return this.db.transaction(() => {
      const taken = this.reviews.rejectByCheck(itemId, version, reason, now);
      if (taken) this.follow([itemId]);
      return taken;
    })();
  }

  /**
   * What decisions on these gates bring about, in the caller's transaction: what they gate settles on them (each
   * item written, with its state now), and what was skipped for a rejection now undone comes back, however far down.
   */
  private follow(gateIds: readonly string[]): { moved: Map<string, string>; revived: string[] } {
    const moved = new Map(this.gates.settle(gateIds).map((row) => [row.id, row.state]));
    return { moved, revived: this.gates.revive() };
  }

  /**
   * What came back with these decisions (it was skipped) is named by each decided gate it comes from, however far
   * down: the record of a bulk decision names it as a lone decision's does. Revived items are few; each is asked once.
   */
  private attributeRevived(before: Map<string, Map<string, string>>, revived: readonly string[]): void {
    for (const id of revived) {
      if ([...before.values()].some((deps) => deps.has(id))) continue;
      const gates = before.size === 1 ? [...before.keys()] : this.ancestorsStmt.all(id).filter((g) => before.has(g));
      for (const gate of gates) before.get(gate)!.set(id, 'skipped');
    }
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

  /** Each gate's dependents with their states now (in the manifest, not removed). */
  private dependentsOf(gateIds: readonly string[]): Map<string, Map<string, string>> {
    const out = new Map<string, Map<string, string>>(gateIds.map((id) => [id, new Map()]));
    this.shapes.clear();
    for (const row of this.dependentsStmt.all(JSON.stringify(gateIds))) {
      out.get(row.gate)!.set(row.id, row.state);
      const [resolution, duration] = JSON.parse(row.shape) as [string | null, number | string | null];
      this.shapes.set(row.id, {
        type: row.type,
        model: row.model,
        resolution,
        duration: duration === null ? null : String(duration),
      });
    }
    return out;
  }

  /**
   * What a decision moved among its gate's dependents, from their states before and after. A decision that
   * `holdsBack` (a rejection, a clear) also names the dependents it came too late for: sent before it.
   */
  private effect(
    before: ReadonlyMap<string, string> = new Map(),
    after: ReadonlyMap<string, string> = new Map(),
    holdsBack: boolean,
    price: (id: string) => number | undefined,
  ): Omit<DecisionEffect, 'itemId' | 'version' | 'decision'> {
    const unlocked: string[] = [];
    const skipped: string[] = [];
    const takenBack: string[] = [];
    const sentBefore: SentBefore[] = [];
    const now = (id: string) => after.get(id) ?? this.items.get(id)?.state ?? 'skipped';
    for (const [id, was] of before) {
      const is = now(id);
      if (HELD.has(was) && UNSENT.has(is)) unlocked.push(id);
      else if (UNSENT.has(was) && HELD.has(is)) takenBack.push(id);
      else if (was !== 'skipped' && is === 'skipped') skipped.push(id);
    }
    if (holdsBack)
      for (const [id, state] of after)
        if (!UNSENT.has(state) && !HELD.has(state)) sentBefore.push({ id, credits: this.spentStmt.get(id) ?? 0 });
    const sum = (ids: string[]) => ids.reduce((total, id) => total + (price(id) ?? 0), 0);
    return {
      unlocked,
      skipped,
      takenBack,
      sentBefore,
      credits: {
        unlocked: sum(unlocked),
        skipped: sum(skipped),
        takenBack: sum(takenBack),
        sentBefore: sentBefore.reduce((total, d) => total + d.credits, 0),
      },
    };
  }

  private entry(
    asked: DecisionAsked,
    effect: Omit<DecisionEffect, 'itemId' | 'version' | 'decision'>,
    note: string | null,
    byTimeout: boolean,
  ): DecisionEntry {
    return {
      itemId: asked.itemId,
      version: asked.version,
      decision: asked.decision ?? 'cleared',
      ...effect,
      note,
      by: asked.by,
      at: asked.now,
      byTimeout,
    };
  }

  /** The entries appended to the record, in one statement however many. */
  private recordAll(entries: readonly DecisionEntry[]): void {
    if (entries.length === 0) return;
    this.insertStmt.run(
      JSON.stringify(
        entries.map((e) => ({
          i: e.itemId,
          v: e.version,
          d: e.decision,
          n: e.note,
          b: e.by,
          a: e.at,
          t: e.byTimeout ? 1 : 0,
          u: e.unlocked,
          s: e.skipped,
          k: e.takenBack,
          f: e.sentBefore,
          c: e.credits,
        })),
      ),
    );
  }

  /** An item's price as the last run priced its shape. */
  private pricer(): (id: string) => number | undefined {
    // Read when a first dependent is priced: a decision on an item that gates nothing reads no prices.
    let prices: ReturnType<typeof shapePrices> | undefined;
    const priceOf = (shape: PriceShape) => (prices ??= shapePrices(this.db))(shape);
    return (id) => {
      const known = this.shapes.get(id);
      if (known) return priceOf(known);
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
