import type { ItemRow, Store } from '../../store/index.js';
import type { ModerationBreaker } from './breaker.js';
import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';
import type { Credits } from '../keys/credits.js';
import type { Feeder, NextItem } from './feeder.js';
import type { KeyRoster } from '../keys/roster.js';
import { holdMaybeAccepted, type JobType, type KeyLane, type KeyLanes } from '../keys/lanes.js';

/** What a loop does next: stop, look again at once, or wait for this first. */
type Step = 'done' | 'again' | Promise<void>;

/** Synchronous steps in a row after which a feed loop lets the event loop run (a catalog hands out thousands at a time). */
const SYNC_STEPS_BEFORE_YIELD = 256;

/** What the feed loops are given: the run's parts they steer by, and the run's own questions. */
export interface FeedLoopsDeps {
  readonly store: Store;
  readonly clock: RunClock;
  readonly control: Control;
  readonly feeder: Feeder;
  readonly breaker: ModerationBreaker;
  readonly credits: Credits;
  readonly lanes: KeyLanes;
  readonly roster: KeyRoster;
  /** Nothing new is sent now: nothing answers, another shell paused the run, or too many outputs wait for the bucket. */
  holdsNew(): boolean;
  /** More items of the type may become ready though none is under way: a first sync still writes items, or some wait for a decision that the run waits for. */
  moreMayCome(type: JobType): boolean;
  /** Nothing of the run is under way: no task, download, check or sync. */
  idle(): boolean;
  /** Starts the item's job task on `lane`, its credits assigned to the key. */
  startJob(item: ItemRow, lane: KeyLane, price: number | undefined): void;
}

/**
 * Keeps each type's slots full, on every key with room, with ready items in
 * their order (priority, then manifest order), until none can become ready.
 * One loop per type; each waits on the run's wake-ups, never on a busy clock.
 */
export class FeedLoops {
  constructor(private readonly deps: FeedLoopsDeps) {}

  /** Both types, until nothing can become ready; a spent tag then stops the run, saying what it left unsent. */
  async run(): Promise<void> {
    await Promise.all([this.feed('image'), this.feed('video')]);
    const { credits, control, store } = this.deps;
    if (credits.spentTags.size === 0 || control.isStopping()) return;
    const spent = [...credits.spentTags];
    const unsent = store.queue.pendingWithTags(spent) + this.deps.feeder.heldBackCount;
    if (unsent === 0) return;
    control.askStop(
      'budget',
      `${spent.map((t) => credits.tagBudgetMessage(t)).join('; ')}: ${unsent} of ${spent.length === 1 ? 'its' : 'their'} items ${unsent === 1 ? 'was' : 'were'} not sent, the others ran. Raise budget.perTag in the manifest and run the same command again to send them.`,
    );
  }

  /**
   * One type's loop. Each step decides synchronously (an item handed out is
   * claimed before the other type's loop looks at whether the run is idle)
   * and gives back what to wait for, if anything.
   */
  private async feed(type: JobType): Promise<void> {
    let inARow = 0;
    while (!this.deps.control.isStopping()) {
      const step = this.step(type);
      if (step === 'done') return;
      if (step !== 'again') {
        inARow = 0;
        await step;
      } else if (++inARow % SYNC_STEPS_BEFORE_YIELD === 0) {
        // Steps that hand out items go round without awaiting; now and then the rest of the process (signals, answers) runs.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  }

  private step(type: JobType): Step {
    const { lanes } = this.deps;
    const free = lanes.withRoomFor(type);
    if (free.length === 0) {
      if (lanes.serving(type).length === 0) {
        this.deps.roster.noKeyLeftFor(type);
        return 'done';
      }
      // Every key's slots are taken: a task's end (or a key leaving, a stop) wakes this.
      return this.waitForEvent();
    }
    // Nothing answers, another shell paused the run, or the bucket lags: nothing new is started (an answer, resume, or
    // a shrinking backlog wakes this).
    if (this.deps.holdsNew()) return this.waitForEvent();
    const next = this.next(type, free);
    return typeof next === 'object' && !(next instanceof Promise) ? this.start(type, next, free) : next;
  }

  /** The next item to start: a due resend first, then a new one; or why none (done, or what to wait for). */
  private next(type: JobType, free: readonly KeyLane[]): NextItem | Step {
    const { feeder, lanes, breaker, clock } = this.deps;
    const first = lanes.all[0]!;
    const lookedAt = clock.now();
    // A due resend first: it is already counted as unanswered, and only its answer can let the breaker go on.
    const resend = feeder.nextResend(type, (fp) => free.includes(lanes.get(fp ?? first.fingerprint)!));
    if (resend) return resend;
    const verdict = breaker.check(feeder.unansweredCount);
    if (verdict === 'stop') return 'done';
    if (verdict === 'wait') {
      if (feeder.answerableCount === 0 && feeder.nextDue(type) === undefined) {
        breaker.held(feeder.unansweredCount);
        return 'done';
      }
      // An answered submission (the breaker's `answered`) or a task's end wakes this.
      return breaker.waitForAnswer(this.waitForEvent());
    }
    return feeder.nextNew(type) ?? this.nothingReady(type, lookedAt);
  }

  /**
   * No item of the type is ready. Done when none is left to run or to come
   * back (items never change type), whatever the other type still does;
   * else waits for a task or download to end, or for the next item waiting
   * for its time (a backoff) to be due.
   */
  private nothingReady(type: JobType, lookedAt: number): Step {
    const { feeder, store, clock } = this.deps;
    // While a first sync is still writing items, or items wait for decisions the run waits for, more may come.
    const more = this.deps.moreMayCome(type);
    if (!more && store.itemReports.workByType()[type].open === 0) return 'done';
    // An item due by the time the feeder looked, yet not handed out, is held by a task or waits for its key's slot or a
    // dependency: only an event changes that, never the clock (waiting 1 ms at a time for it spun a core while a resend
    // waited for its window). One that came due since is looked for again at once.
    const due = feeder.nextDue(type);
    const dueLater = due !== undefined && due > lookedAt;
    if (!dueLater && !more && this.deps.idle()) return 'done';
    // A decision recorded by another process moves no event here: the wait looks again within a second anyway.
    return this.waitForEvent(dueLater ? due - clock.now() : undefined);
  }

  /** Gives the item to a key within the budget; 'done' when the budget stops the run. */
  private start(type: JobType, next: NextItem, free: readonly KeyLane[]): Step {
    const { credits, feeder, lanes, clock } = this.deps;
    const price = credits.priceOf(next);
    const tags = credits.budgetedTagsOf(next);
    if (price === undefined && (credits.budget !== undefined || tags.length > 0)) {
      // A resend may be paid already: never skipped, it waits for a run that knows its price.
      if (next.key_fp !== undefined)
        return this.holdResend(
          next,
          'PRICE_UNKNOWN',
          `no price is known for ${next.model}, so the budget could not be kept; give one in the manifest (prices: { ${next.model}: credits }) and run again: it is resent with its key, never paid twice`,
        );
      feeder.skipForGood(
        next.id,
        'PRICE_UNKNOWN',
        `no price is known for ${next.model} (the catalog shows none and nothing was charged for it yet), so the budget could not be kept: give one in the manifest (prices: { ${next.model}: credits }, or by resolution and duration for video) and run again`,
      );
      return 'again';
    }
    if (credits.overBudget(price ?? 0)) return 'done';
    const spentTag = credits.tagOverBudget(tags, price ?? 0);
    if (spentTag !== undefined) {
      // That tag's items are held back (they stay pending, for a run with a larger budget); the others go on.
      this.deps.store.queue.excludeTags([...credits.spentTags]);
      // A resend is not in the ready query the exclusion filters: asked for again, it would come back at once, forever.
      if (next.key_fp !== undefined)
        return this.holdResend(
          next,
          'TAG_BUDGET',
          `${credits.tagBudgetMessage(spentTag)}; raise budget.perTag and run again: it is resent with its key, never paid twice`,
        );
      return 'again';
    }
    if (next.key_fp === undefined && price !== undefined && !this.fitsToday(free, price)) {
      // No key with a free slot has room for it today: a smaller item of the same priority that fits goes first.
      const smaller = this.deps.feeder.nextFitting(next, (row) => {
        const p = credits.priceOf(row);
        return p !== undefined && this.fitsToday(free, p);
      });
      if (smaller) return this.start(type, smaller, free);
    }
    // A resend goes with its attempt's key; a new item with the key that has the most room.
    const lane =
      next.key_fp === undefined
        ? lanes.forNew(type, free, price ?? 0, clock.now())
        : lanes.get(next.key_fp ?? lanes.all[0]!.fingerprint)!;
    // Every key with a free slot waits for its daily cap: a busy key's task end wakes this, and a new key day is a matter of time.
    if (!lane) return this.deps.control.waitForWake(clock.scaled(1000));
    this.deps.startJob(next, lane, price);
    return 'again';
  }

  /**
   * A resend not sent in this run: held "maybe accepted" with why (a later
   * run resends it with its key), and passed over by the feeder from now on.
   */
  private holdResend(next: NextItem, code: string, message: string): Step {
    const { feeder, lanes } = this.deps;
    feeder.holdResend(next.id);
    const lane = lanes.get(next.key_fp ?? lanes.all[0]!.fingerprint);
    holdMaybeAccepted(this.deps, lane, next, { code, message });
    return 'again';
  }

  /** Whether a key with a free slot has room today for a submission of `price`. */
  private fitsToday(free: readonly KeyLane[], price: number): boolean {
    const now = this.deps.clock.now();
    return free.some((l) => !l.cap.isWaiting(now, price));
  }

  private waitForEvent(dueInMs?: number): Promise<void> {
    return this.deps.control.waitForEvent(this.deps.clock.scaled(1000), dueInMs);
  }
}
