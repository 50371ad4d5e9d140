import { KEY_DAY_MS } from '../scheduler/limits.js';
import type { Store } from '../store/index.js';
import type { RunClock } from './clock.js';
import type { Control } from './control.js';
import type { DailyCap } from './daily-cap.js';
import { releaseOnce } from '../util/once.js';

const WEEK_MS = 7 * KEY_DAY_MS;

export interface GateLimits {
  maxCredits?: number | undefined;
  maxBlocked: number;
}

/** Lets reserved credits go once the submission is answered, with what it was charged (nothing, when refused). */
export type Release = (charged?: number) => void;

/**
 * What a submission must pass before it leaves: the run's budget, its key's
 * daily cap (with the credits of submissions still unanswered reserved), a
 * DAILY_CAP_REACHED pause, and the moderation circuit breaker (which counts
 * the account's blocked submissions, whatever key sent them: the service's
 * threshold is the account's).
 */
export class Gates {
  /** Credits of submissions not yet answered, over every key: the budget counts them. */
  private reserved = 0;
  /** Credits of items given to a key whose submissions have not reached the gate yet: the budget counts them too. */
  private assigned = 0;
  /** Per model, the largest charge seen: the bound for items the catalog and manifest do not price. */
  private readonly largestCharge = new Map<string, number>();
  private readonly unpricedInFlight = new Set<string>();
  private readonly unpricedNoted = new Set<string>();
  /** Blocked submissions the coordinator counts for the run's keys, by every process (refreshed by the run). */
  sharedBlocked = 0;

  constructor(
    private readonly store: Store,
    private readonly limits: GateLimits,
    private readonly clock: RunClock,
    private readonly control: Control,
    /** Called when a key starts or stops waiting for its daily cap. */
    private readonly onWaiting: () => void,
    /** Says when the coordinator stops (false) or starts again (true) answering. */
    private readonly onCoordinator: (reachable: boolean, message: string) => void = () => {},
  ) {
    for (const { model, credits } of store.attempts.largestChargeByModel()) this.largestCharge.set(model, credits);
  }

  /** The price to reserve: the listed one, else the largest charge seen for the model. */
  bound(model: string, listed: number | undefined): number | undefined {
    return listed ?? this.largestCharge.get(model);
  }

  noteCharge(model: string, credits: number): void {
    if (credits > (this.largestCharge.get(model) ?? -1)) this.largestCharge.set(model, credits);
  }

  /** True (and the run stops) when `price` more would pass the budget. */
  overBudget(price: number): boolean {
    const max = this.limits.maxCredits;
    if (max === undefined) return false;
    const { charged, refunded } = this.store.attempts.totals();
    if (charged - refunded + this.reserved + this.assigned + price <= max) return false;
    this.control.stop(
      'budget',
      `the run's budget of ${max} credits is reached (${charged - refunded} charged net of refunds${this.reserved ? `, ${this.reserved} reserved for submissions not yet answered` : ''}). Raise --max-credits or budget.maxCredits and run again to go on.`,
    );
    return true;
  }

  /**
   * Waits while the key's daily cap (or a DAILY_CAP_REACHED pause) forbids
   * this submission; reserves its credits, against the run's budget and the
   * key's cap, until the caller releases them after the answer, so concurrent
   * submissions cannot overshoot either together. A model nothing prices sends
   * one submission at a time until a charge shows its price. `handOver`
   * says whether, rather than wait, the submission may go to another key.
   */
  async dailyCapGate(
    cap: DailyCap,
    price: number | undefined,
    model: string,
    handOver?: (credits: number) => boolean,
    withinBudget = false,
  ): Promise<Release | 'hand-over' | undefined> {
    const credits = price ?? 0;
    for (;;) {
      // An item given out within the budget still goes when the budget then stops the run (as one reserved does).
      const goesAnyway = withinBudget && this.control.stopReason?.kind === 'budget';
      if ((this.control.isStopping() && !goesAnyway) || this.overBudget(credits)) return undefined;
      if (price === undefined && this.unpricedInFlight.has(model)) {
        // Its release wakes this.
        await this.control.waitForEvent(this.clock.scaled(1000));
        const seen = this.largestCharge.get(model);
        if (seen !== undefined) return this.dailyCapGate(cap, seen, model, handOver, withinBudget);
        continue;
      }
      const now = this.clock.now();
      let until = cap.blockedUntil(credits, now);
      // Other processes on the key: the day's room is theirs too, reserved in the coordinator.
      const shared = until === 0 && cap.shared ? await this.reserveShared(cap, credits, now) : undefined;
      if (shared === 'unreachable') continue;
      if (typeof shared === 'object' && this.dayTurnedSince(cap, shared.day, credits)) {
        // The day ended (or its last moments came) while the database answered: the room reserved was the old day's; asked again.
        cap.shared!.settleCredits(shared.id, cap.fingerprint, shared.day, 0).catch(() => {});
        continue;
      }
      if (shared === 'full') until = this.clock.dayStart(this.clock.dayOf(now) + 1);
      if (until === 0) {
        if (cap.waitingUntil !== undefined) {
          cap.waitingUntil = undefined;
          this.onWaiting();
        }
        return this.reserve(
          credits,
          cap,
          price === undefined ? model : undefined,
          typeof shared === 'object' ? shared : undefined,
        );
      }
      // Another key has room now: this submission, never sent, goes to it instead of waiting.
      if (handOver?.(credits)) return 'hand-over';
      // Said once per wait, not by each of the submissions waiting, on each wake.
      if (cap.waitingUntil !== until) {
        cap.waitingUntil = until;
        this.onWaiting();
      }
      // Another process's reservations may be released before the day ends: asked again sooner then.
      await this.control.waitForWake(Math.min(until - now, this.clock.scaled(shared === 'full' ? 5_000 : 60_000)));
    }
  }

  /** True when `day` is over, or in its last moments, now: what was reserved on it no longer holds for a submission sent now. */
  private dayTurnedSince(cap: DailyCap, day: number, credits: number): boolean {
    const now = this.clock.now();
    return this.clock.dayOf(now) !== day || cap.blockedUntil(credits, now) > 0;
  }

  /** The credits reserved in the coordinator on the key's day (the reservation), or why not. */
  private async reserveShared(
    cap: DailyCap,
    credits: number,
    now: number,
  ): Promise<{ id: string; day: number } | 'full' | 'unreachable'> {
    const day = this.clock.dayOf(now);
    try {
      const id = await cap.shared!.reserveCredits(cap.fingerprint, day, credits, cap.cap);
      this.onCoordinator(true, 'the coordinator is reachable again');
      return id ? { id, day } : 'full';
    } catch (error) {
      this.onCoordinator(
        false,
        `${(error as Error).message}; submissions wait until it answers again (nothing paid is lost)`,
      );
      await this.control.waitForWake(1_000);
      return 'unreachable';
    }
  }

  /** An item was given to a key: its credits count against the budget until its submission reserves them. */
  assign(credits: number): () => void {
    this.assigned += credits;
    return releaseOnce(() => (this.assigned -= credits));
  }

  private reserve(
    credits: number,
    cap: DailyCap,
    unpricedModel: string | undefined,
    shared?: { id: string; day: number },
  ): Release {
    this.reserved += credits;
    const releaseCap = cap.reserve(credits);
    if (unpricedModel !== undefined) {
      this.unpricedInFlight.add(unpricedModel);
      if (!this.unpricedNoted.has(unpricedModel)) {
        this.unpricedNoted.add(unpricedModel);
        this.control.emit({
          kind: 'notice',
          message: `no price is known for ${unpricedModel}: its first job is sent alone and the daily cap counts it once the service reports its charge (give prices: in the manifest to reserve ahead)`,
        });
      }
    }
    let released = false;
    return (charged = 0) => {
      if (released) return;
      released = true;
      this.reserved -= credits;
      releaseCap();
      // Settled on the day the answer came, as this process's own day count is. If the database cannot be told,
      // the reservation's lease runs out; this process's own day count still has the charge.
      if (shared)
        cap
          .shared!.settleCredits(shared.id, cap.fingerprint, this.clock.dayOf(this.clock.now()), charged)
          .catch(() => {});
      if (unpricedModel !== undefined && this.unpricedInFlight.delete(unpricedModel)) this.control.wake();
    };
  }

  /**
   * The moderation circuit breaker. Submissions not yet answered count as
   * possibly blocked, so blocked plus unanswered never passes --max-blocked
   * (at most 29): the key's count cannot reach the service's threshold of 30.
   */
  /**
   * The breaker waits for answers this run will never see (submissions held
   * "maybe accepted" for a later run count as possibly blocked): the run
   * stops rather than wait for nothing.
   */
  breakerHeld(unanswered: number): void {
    const blocked = Math.max(
      this.sharedBlocked,
      this.store.accounting.blockedSince(this.clock.now() - this.clock.scaled(WEEK_MS)),
    );
    this.control.stop(
      'moderation',
      `${blocked} submissions were blocked by moderation in the last 7 days and ${unanswered} more have no answer yet (each may have been blocked); another would risk the service's threshold of 30. Run the same command again: it resends those with their keys, and goes on once they are answered.`,
    );
  }

  breaker(unanswered: number): 'go' | 'wait' | 'stop' {
    const blocked = Math.max(
      this.sharedBlocked,
      this.store.accounting.blockedSince(this.clock.now() - this.clock.scaled(WEEK_MS)),
    );
    if (blocked + unanswered < this.limits.maxBlocked) return 'go';
    if (blocked < this.limits.maxBlocked) return 'wait';
    this.control.stop(
      'moderation',
      `${blocked} submissions were blocked by moderation in the last 7 days; stopping before the service's threshold of 30 costs the key its eligibility. Review the blocked prompts (genbatch status).`,
    );
    return 'stop';
  }
}
