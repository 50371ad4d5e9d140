import { UNANSWERED_STATES, type ItemRow, type Store } from '../../store/index.js';
import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';

/** An item to start: `key_fp` is set on a resend (its attempt's key, null from before keys were recorded), undefined on a new item. */
export type NextItem = ItemRow & { key_fp?: string | null };

/**
 * Ready items asked of SQLite at a time: a few first (the first is nearly
 * always free, and each row costs a whole item, spec and all), then larger
 * pages only while this run's own tasks hold them all.
 */
const FIRST_READY_PAGE = 4;
const READY_PAGE = 64;
/** How far past an item that does not fit the key day the feeder looks for one that does. */
const FITTING_LOOKAHEAD = 1024;

/**
 * Hands out ready items: pending, due, every dependency done (the `deps`
 * table, filled at sync, answers that in SQLite), in manifest order, that no
 * task of this run holds. Tracks which items this run holds, and which
 * submissions have no job yet (each may still come back blocked).
 */
export class Feeder {
  private readonly claimed = new Set<string>();
  /** Resends held back for this run (their tag's budget is spent): a later run resends them with their key. */
  private readonly heldBack = new Set<string>();
  private readonly unanswered = new Set<string>();
  private endedSeen = -1;
  /** While a canary runs, only its items are handed out. */
  private only: readonly string[] | undefined;

  constructor(
    private readonly store: Store,
    private readonly clock: RunClock,
    private readonly control: Control,
  ) {}

  /** A deferred resend that is due (it may already be paid for) whose key has room (`keyHasRoom`): handed out before any new item. */
  nextResend(type: 'image' | 'video', keyHasRoom: (keyFp: string | null) => boolean): NextItem | undefined {
    return this.store.queue
      .dueResends(type, this.clock.now(), READY_PAGE)
      .find((row) => !this.claimed.has(row.id) && !this.heldBack.has(row.id) && keyHasRoom(row.key_fp));
  }

  /**
   * A resend is not sent in this run: its attempt and key are kept for a
   * later run. Resends do not come from the ready query a spent tag's
   * exclusion filters, so the feeder passes it over itself.
   */
  holdResend(id: string): void {
    this.heldBack.add(id);
  }

  /** Resends held back in this run. */
  get heldBackCount(): number {
    return this.heldBack.size;
  }

  /** A ready pending item, in manifest order; dependents of items that ended without an output are skipped first. */
  nextNew(type: 'image' | 'video'): NextItem | undefined {
    if (this.only) return this.nextOf(this.only, type);
    this.skipDoomed();
    for (let after: ItemRow | undefined, size = FIRST_READY_PAGE; ; size = READY_PAGE) {
      const page = this.store.queue.ready(type, this.clock.now(), after, size);
      const free = page.find((row) => !this.claimed.has(row.id));
      if (free || page.length < size) return free;
      after = page.at(-1)!;
    }
  }

  /**
   * The first ready item of the same priority as `head` (after it in the
   * ready order) that `fits` accepts, looking at no more than `limit` items:
   * when `head` does not fit what is left of the key day, a smaller one that
   * does goes first.
   */
  nextFitting(head: ItemRow, fits: (row: ItemRow) => boolean, limit = FITTING_LOOKAHEAD): NextItem | undefined {
    if (this.only) return undefined;
    let after: ItemRow = head;
    for (let seen = 0; seen < limit; ) {
      const page = this.store.queue.ready(head.type, this.clock.now(), after, READY_PAGE);
      for (const row of page) {
        if (row.rank !== head.rank || ++seen > limit) return undefined;
        if (!this.claimed.has(row.id) && fits(row)) return row;
      }
      if (page.length < READY_PAGE) return undefined;
      after = page.at(-1)!;
    }
    return undefined;
  }

  /** Hands out only these items, each once what it waits for is done, until `restrictTo(undefined)`. */
  restrictTo(ids: readonly string[] | undefined): void {
    this.only = ids;
  }

  private nextOf(ids: readonly string[], type: 'image' | 'video'): ItemRow | undefined {
    const now = this.clock.now();
    for (const id of ids) {
      if (this.claimed.has(id)) continue;
      const row = this.store.items.get(id);
      const free = row && row.type === type && row.state === 'pending' && row.not_before <= now && !row.removed;
      if (free && !this.store.queue.waitsForAny(id)) return row;
    }
    return undefined;
  }

  /** When an item of the type that waits for its time (a backoff) is due, if one does. */
  nextDue(type: 'image' | 'video'): number | undefined {
    return this.store.queue.nextDue(type);
  }

  /** Until none is left: a skipped item dooms its own dependents in turn. Asked only when an item has ended without an output since. */
  private skipDoomed(): void {
    const ended = this.store.itemReports.endedWithoutOutput();
    if (ended === this.endedSeen) return;
    for (const { id, code, message } of this.store.lifecycle.skipDoomed(this.clock.now()))
      this.control.emit({ kind: 'item-final', itemId: id, state: 'skipped', code, message });
    this.endedSeen = this.store.itemReports.endedWithoutOutput();
  }

  /** pending → skipped, said as the item's end. */
  skipForGood(id: string, code: string, message: string): void {
    if (this.store.lifecycle.markSkipped(id, { code, message }, this.clock.now()))
      this.control.emit({ kind: 'item-final', itemId: id, state: 'skipped', code, message });
  }

  claim(item: ItemRow): void {
    this.claimed.add(item.id);
    if (
      item.state === 'pending' ||
      item.state === 'queued' ||
      (UNANSWERED_STATES as readonly string[]).includes(item.state)
    )
      this.unanswered.add(item.id);
  }

  /** The item's submission was answered with a job: it can no longer be blocked. */
  answered(id: string): void {
    this.unanswered.delete(id);
  }

  /** The task ended; an item still submitting (a deferred or held resend) may still come back blocked, so it stays counted. */
  release(id: string): void {
    this.claimed.delete(id);
    const state = this.store.items.get(id)?.state;
    if (!state || !(UNANSWERED_STATES as readonly string[]).includes(state)) this.unanswered.delete(id);
  }

  /** Whether a task of this run holds the item. */
  holds(id: string): boolean {
    return this.claimed.has(id);
  }

  /** The items this run's tasks hold, in the order they were handed out. */
  heldIds(): string[] {
    return [...this.claimed];
  }

  get held(): number {
    return this.claimed.size;
  }

  get unansweredCount(): number {
    return this.unanswered.size;
  }

  /** Unanswered submissions this run can still see answered: held by a task, or a resend waiting for its time. Held "maybe accepted" ones wait for a later run. */
  get answerableCount(): number {
    let n = 0;
    for (const id of this.unanswered) if (this.claimed.has(id) || this.store.items.get(id)?.state === 'submitting') n++;
    return n;
  }
}
