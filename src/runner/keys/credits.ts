import type { Catalog } from '../../api/catalog.js';
import { priceOf } from '../../estimate/prices.js';
import type { PriceShape } from '../../store/shape-prices.js';
import type { Manifest } from '../../manifest/index.js';
import type { ItemRow, Store } from '../../store/index.js';
import { releaseOnce } from '../../util/once.js';
import type { ItemSpec } from '../../manifest/index.js';
import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';
import type { RoomTaken } from '../../coordinator/shared-day.js';
import type { DailyCap } from './daily-cap.js';

/** One budgeted tag's credits: charged net of refunds (the state's, then this run's), and those of its items under way. */
interface TagCredits {
  budget: number;
  spent: number;
  reserved: number;
  assigned: number;
}

/** What a run's credits are counted against: its budget, the prices, the tags' budgets. */
export interface CreditsSettings {
  /** The run's budget, net of refunds. */
  budget?: number | undefined;
  catalog?: Catalog | undefined;
  /** The manifest's own prices, for models the catalog does not price. */
  prices?: Manifest['prices'];
  /** Per tag, the credits its items may be charged, net of refunds (`budget.perTag`). */
  perTag?: Readonly<Record<string, number>> | undefined;
}

/**
 * The run's credits, in one place: the price of each attempt, the run's
 * budget, each key's daily cap (a DailyCap, with the coordinator's shared
 * room behind it when processes share the key), and every attempt's
 * reservation through its life. The budget counts what was charged net of
 * refunds, what is reserved for submissions not yet answered, and what is
 * assigned to keys for items not yet at their credit check.
 */
export class Credits {
  /** Credits of submissions not yet answered, over every key. */
  private reserved = 0;
  /** Credits of items given to a key whose submissions have not reached the credit check yet. */
  private assigned = 0;
  /** Per model, the largest charge seen: the bound for items the catalog and manifest do not price. */
  private readonly largestCharge = new Map<string, number>();
  private readonly unpricedInFlight = new Set<string>();
  private readonly unpricedNoted = new Set<string>();
  /** Until when every key waits for its daily cap, while they all do. */
  private everyKeyWaitsUntil: number | undefined;
  /** The budgeted tags, each with its credits (see `budget.perTag`). */
  private readonly tags = new Map<string, TagCredits>();
  /** Budgeted tags found spent: their items are no longer handed out. */
  readonly spentTags = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly clock: RunClock,
    private readonly control: Control,
    private readonly options: CreditsSettings,
    /** The caps of the keys still in the run: the run waits when all of them do. */
    private readonly activeCaps: () => readonly DailyCap[],
    /** Called when every key starts waiting for its cap (until then) or one stops (undefined). */
    private readonly onEveryKeyWaits: (until: number | undefined) => void = () => {},
  ) {
    for (const { model, credits } of store.attempts.largestChargeByModel()) this.largestCharge.set(model, credits);
    const perTag = Object.entries(options.perTag ?? {});
    if (perTag.length === 0) return;
    // Read once: from here on the run counts its own charges and refunds per tag.
    const net = new Map(store.itemReports.byTag().map((t) => [t.tag, t.charged - t.refunded]));
    for (const [tag, budget] of perTag)
      this.tags.set(tag, { budget, spent: net.get(tag) ?? 0, reserved: 0, assigned: 0 });
  }

  /** The item's tags that have a budget. */
  budgetedTagsOf(item: ItemRow): string[] {
    if (this.tags.size === 0) return [];
    const tags = (JSON.parse(item.spec) as { tags?: string[] }).tags ?? [];
    return tags.filter((t) => this.tags.has(t));
  }

  /**
   * The first of `tags` whose budget `price` more would pass, if any; from
   * then on that tag counts as spent (its items are held back).
   */
  tagOverBudget(tags: readonly string[], price: number): string | undefined {
    for (const tag of tags) {
      const t = this.tags.get(tag)!;
      if (t.spent + t.reserved + t.assigned + price <= t.budget) continue;
      this.spentTags.add(tag);
      return tag;
    }
    return undefined;
  }

  /** What a spent tag's stop says. */
  tagBudgetMessage(tag: string): string {
    const t = this.tags.get(tag)!;
    return `the budget of tag ${tag} (${t.budget} credits) is reached (${t.spent} charged net of refunds)`;
  }

  /** A job of the item was refunded: its tags have that much more room. */
  refunded(tags: readonly string[], credits: number): void {
    for (const tag of tags) this.tags.get(tag)!.spent -= credits;
  }

  /** Adds `credits` to one counter of each tag; the returned function takes them back, once. */
  private countOnTags(tags: readonly string[], field: 'reserved' | 'assigned', credits: number): () => void {
    for (const tag of tags) this.tags.get(tag)![field] += credits;
    return releaseOnce(() => {
      for (const tag of tags) this.tags.get(tag)![field] -= credits;
    });
  }

  /** The best bound known for one job of the item: the catalog's or manifest's price, else the largest charge seen. */
  priceOf(item: ItemRow): number | undefined {
    const spec = JSON.parse(item.spec) as ItemSpec;
    const listed = priceOf(spec, this.options.catalog?.get(spec.type, spec.model), this.options.prices).credits;
    return listed ?? this.largestCharge.get(item.model);
  }

  /** What one job of this shape costs, as the catalog or the manifest lists it. */
  priceOfShape(shape: PriceShape): number | undefined {
    const type = shape.type as ItemSpec['type'];
    const spec = { id: '', prompt: '', type, model: shape.model } as ItemSpec;
    if (shape.resolution !== null) spec.resolution = shape.resolution;
    if (shape.duration !== null) spec.duration = shape.duration;
    return priceOf(spec, this.options.catalog?.get(type, shape.model), this.options.prices).credits;
  }

  /** The service charged this for a job of `model`: a bound for the next unpriced ones. */
  noteCharge(model: string, credits: number): void {
    if (credits > (this.largestCharge.get(model) ?? -1)) this.largestCharge.set(model, credits);
  }

  get budget(): number | undefined {
    return this.options.budget;
  }

  /** True (and the run stops) when `price` more would pass the budget. */
  overBudget(price: number): boolean {
    const max = this.options.budget;
    if (max === undefined) return false;
    const { charged, refunded } = this.store.attempts.totals();
    if (charged - refunded + this.reserved + this.assigned + price <= max) return false;
    this.control.askStop(
      'budget',
      `the run's budget of ${max} credits is reached (${charged - refunded} charged net of refunds${this.reserved ? `, ${this.reserved} reserved for submissions not yet answered` : ''}). Raise --max-credits or budget.maxCredits and run again to go on.`,
    );
    return true;
  }

  /**
   * The reservation of one attempt, on its key's cap. `assign`: the item was
   * just given to the key, and its credits count against the budget and the
   * cap from now (the key takes no more than its cap can hold).
   */
  forAttempt(item: ItemRow, cap: DailyCap, price: number | undefined, assign: boolean): Reservation {
    const tags = this.budgetedTagsOf(item);
    let dropAssigned: (() => void) | undefined;
    if (assign && price) {
      const fromCap = cap.assign(price);
      const fromTags = this.countOnTags(tags, 'assigned', price);
      this.assigned += price;
      dropAssigned = releaseOnce(() => {
        fromCap();
        fromTags();
        this.assigned -= price;
      });
    }
    return new Reservation(this, item.model, tags, cap, price, dropAssigned);
  }

  /**
   * Waits while the key's daily cap (or a DAILY_CAP_REACHED pause) forbids a
   * submission of `price`; then reserves its credits, against the budget and
   * the key's cap, until the answer settles them, so concurrent submissions
   * cannot overshoot either together. A model nothing prices sends one
   * submission at a time until a charge shows its price.
   */
  async admit(
    cap: DailyCap,
    price: number | undefined,
    reservation: { model: string; tags: readonly string[] },
    handOver: ((credits: number) => boolean) | undefined,
    withinBudget: boolean,
  ): Promise<Held | 'hand-over' | undefined> {
    const { model, tags } = reservation;
    const credits = price ?? 0;
    for (;;) {
      // An item given out within the budget still goes when the budget then stops the run (as one reserved does).
      const goesAnyway = withinBudget && this.control.stopReason?.kind === 'budget';
      if ((this.control.isStopping() && !goesAnyway) || this.overBudget(credits)) return undefined;
      // A submission not given out within its tags' budgets (a new attempt after a failed job, a resend): not past them.
      if (!withinBudget && this.tagOverBudget(tags, credits) !== undefined) return undefined;
      if (price === undefined && this.unpricedInFlight.has(model)) {
        // Its release wakes this.
        await this.control.waitForEvent(this.clock.scaled(1000));
        const seen = this.largestCharge.get(model);
        if (seen !== undefined) return this.admit(cap, seen, reservation, handOver, withinBudget);
        continue;
      }
      const now = this.clock.now();
      let until = cap.blockedUntil(credits, now);
      // Other processes on the key: the day's room is theirs too, taken in the coordinator.
      const shared = until === 0 && cap.shared ? await cap.shared.take(this.clock.dayOf(now), credits) : undefined;
      if (shared === 'unreachable') continue;
      if (typeof shared === 'object' && this.dayTurnedSince(cap, shared.day, credits)) {
        // The day ended (or its last moments came) while the database answered: the room taken was the old day's; asked again.
        shared.settle(shared.day, 0);
        continue;
      }
      if (shared === 'full') until = this.clock.dayStart(this.clock.dayOf(now) + 1);
      if (until === 0) {
        this.capWait(cap, undefined);
        const room = typeof shared === 'object' ? shared : undefined;
        return this.reserve(credits, cap, tags, price === undefined ? model : undefined, room);
      }
      // Another key has room now: this submission, never sent, goes to it instead of waiting.
      if (handOver?.(credits)) return 'hand-over';
      this.capWait(cap, until);
      // Another process's reservations may be released before the day ends: asked again sooner then.
      await this.control.waitForWake(Math.min(until - now, this.clock.scaled(shared === 'full' ? 5_000 : 60_000)));
    }
  }

  /** True when `day` is over, or in its last moments, now: what was taken on it no longer holds for a submission sent now. */
  private dayTurnedSince(cap: DailyCap, day: number, credits: number): boolean {
    const now = this.clock.now();
    return this.clock.dayOf(now) !== day || cap.blockedUntil(credits, now) > 0;
  }

  /** A key started (until) or stopped (undefined) waiting for its cap: the run waits, and says so, when every key does. */
  private capWait(cap: DailyCap, until: number | undefined): void {
    // Said once per wait, not by each of the submissions waiting, on each wake.
    if (cap.waitingUntil === until) return;
    cap.waitingUntil = until;
    const waits = this.activeCaps().map((c) => c.waitingUntil);
    const every =
      waits.length > 0 && waits.every((w) => w !== undefined) ? Math.min(...(waits as number[])) : undefined;
    if (every === this.everyKeyWaitsUntil) return;
    this.everyKeyWaitsUntil = every;
    this.onEveryKeyWaits(every);
    if (every !== undefined) this.control.emit({ kind: 'waiting', reason: 'the daily credit cap', untilMs: every });
  }

  /** Until when every key waits for its daily cap, while they all do. */
  get waitingUntil(): number | undefined {
    return this.everyKeyWaitsUntil;
  }

  private reserve(
    credits: number,
    cap: DailyCap,
    tags: readonly string[],
    unpricedModel: string | undefined,
    shared?: RoomTaken,
  ): Held {
    this.reserved += credits;
    const releaseCap = cap.reserve(credits);
    const releaseTags = this.countOnTags(tags, 'reserved', credits);
    if (unpricedModel !== undefined) this.sendAlone(unpricedModel);
    let released = false;
    return (charged = 0) => {
      if (released) return;
      released = true;
      this.reserved -= credits;
      releaseCap();
      releaseTags();
      for (const tag of tags) this.tags.get(tag)!.spent += charged;
      shared?.settle(this.clock.dayOf(this.clock.now()), charged);
      if (unpricedModel !== undefined && this.unpricedInFlight.delete(unpricedModel)) this.control.wake();
    };
  }

  private sendAlone(model: string): void {
    this.unpricedInFlight.add(model);
    if (this.unpricedNoted.has(model)) return;
    this.unpricedNoted.add(model);
    this.control.emit({
      kind: 'notice',
      message: `no price is known for ${model}: its first job is sent alone and the daily cap counts it once the service reports its charge (give prices: in the manifest to reserve ahead)`,
    });
  }
}

/** Lets reserved credits go once the submission is answered, with what it was charged (nothing, when refused). */
type Held = (charged?: number) => void;

/**
 * One attempt's credits through its life: assigned to its key (counted by
 * the budget and the key's cap before the submission reaches its credit check),
 * reserved at the credit check until the answer, then settled with the charge or
 * released. A submission that waits again (a new key day, a pause) goes
 * through the credit check again; the attempt's task closes it when it ends.
 */
export class Reservation {
  private held: Held | undefined;

  constructor(
    private readonly credits: Credits,
    readonly model: string,
    /** The item's tags that have a budget: its credits count in each. */
    readonly tags: readonly string[],
    readonly cap: DailyCap,
    /** The attempt's price, computed once: the listed one, else the largest charge seen when it was given out. */
    readonly price: number | undefined,
    private dropAssigned: (() => void) | undefined,
  ) {}

  /**
   * Through the credit check: 'reserved', 'hand-over' (never sent, and another key
   * has room: it goes back for that one), or undefined when the run stops.
   */
  async reserve(handOver?: (credits: number) => boolean): Promise<'reserved' | 'hand-over' | undefined> {
    // From here its credits count as reserved, no longer as assigned.
    const withinBudget = this.dropAssigned !== undefined;
    this.dropAssigned?.();
    this.dropAssigned = undefined;
    const admitted = await this.credits.admit(this.cap, this.price, this, handOver, withinBudget);
    if (typeof admitted !== 'function') return admitted;
    this.held = admitted;
    return 'reserved';
  }

  /** The submission was answered with a job charged `charged`. */
  settle(charged: number): void {
    this.held?.(charged);
    this.held = undefined;
  }

  /** Not sent after all, or refused: nothing was charged. */
  release(): void {
    this.held?.();
    this.held = undefined;
  }

  /** The attempt's task ended: whatever it still holds goes. */
  close(): void {
    this.dropAssigned?.();
    this.dropAssigned = undefined;
    this.release();
  }
}
