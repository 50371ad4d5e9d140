import { KEY_DAY_MS } from '../scheduler/limits.js';
import type { Store } from '../store/index.js';
import type { RunClock } from './clock.js';
import type { Control } from './control.js';

const WEEK_MS = 7 * KEY_DAY_MS;

export interface GateLimits {
  dailyCap: number;
  maxCredits?: number | undefined;
  maxBlocked: number;
}

/**
 * What a submission must pass before it leaves: the run's budget, the key
 * day's cap (with the credits of submissions still unanswered reserved), a
 * DAILY_CAP_REACHED pause, and the moderation circuit breaker.
 */
export class Gates {
  private reserved = 0;
  private dailyPausedUntil = 0;
  /** Per model, the largest charge seen: the bound for items the catalog and manifest do not price. */
  private readonly largestCharge = new Map<string, number>();
  private readonly unpricedInFlight = new Set<string>();
  private readonly unpricedNoted = new Set<string>();
  /** Until when submissions wait for the daily cap, while they do. */
  waitingUntil: number | undefined;

  constructor(
    private readonly store: Store,
    private readonly limits: GateLimits,
    private readonly clock: RunClock,
    private readonly control: Control,
    /** Called when submissions start waiting for the cap (status shows until when). */
    private readonly onWaiting: (until: number) => void,
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
    if (charged - refunded + this.reserved + price <= max) return false;
    this.control.stop('budget', `the run's budget of ${max} credits is reached (${charged - refunded} charged net of refunds${this.reserved ? `, ${this.reserved} reserved for submissions not yet answered` : ''}). Raise --max-credits or budget.maxCredits and run again to go on.`);
    return true;
  }

  /**
   * Waits while the key day's cap (or a DAILY_CAP_REACHED pause) forbids this
   * submission; reserves its credits until the caller releases them after the
   * answer, so concurrent submissions cannot overshoot the cap or the budget
   * together. A model nothing prices sends one submission at a time until a
   * charge shows its price.
   */
  async dailyCapGate(price: number | undefined, model: string): Promise<(() => void) | undefined> {
    const credits = price ?? 0;
    for (;;) {
      if (this.control.isStopping() || this.overBudget(credits)) return undefined;
      if (price === undefined && this.unpricedInFlight.has(model)) {
        await this.control.waitForWake(this.clock.scaled(1000));
        const seen = this.largestCharge.get(model);
        if (seen !== undefined) return this.dailyCapGate(seen, model);
        continue;
      }
      const now = this.clock.now();
      const day = this.clock.dayOf(now);
      const over = this.store.accounting.chargedOn(day) + this.reserved + credits > this.limits.dailyCap;
      const until = Math.max(this.dailyPausedUntil, over ? this.clock.dayStart(day + 1) : 0);
      if (until <= now) {
        this.waitingUntil = undefined;
        return this.reserve(credits, price === undefined ? model : undefined);
      }
      // Said once per wait, not by each of the submissions waiting, on each wake.
      if (this.waitingUntil !== until) {
        this.waitingUntil = until;
        this.onWaiting(until);
        this.control.emit({ kind: 'waiting', reason: 'the daily credit cap', untilMs: until });
      }
      await this.control.waitForWake(Math.min(until - now, this.clock.scaled(60_000)));
    }
  }

  private reserve(credits: number, unpricedModel: string | undefined): () => void {
    this.reserved += credits;
    if (unpricedModel !== undefined) {
      this.unpricedInFlight.add(unpricedModel);
      if (!this.unpricedNoted.has(unpricedModel)) {
        this.unpricedNoted.add(unpricedModel);
        this.control.emit({ kind: 'notice', message: `no price is known for ${unpricedModel}: its first job is sent alone and the daily cap counts it once the service reports its charge (give prices: in the manifest to reserve ahead)` });
      }
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.reserved -= credits;
      if (unpricedModel !== undefined && this.unpricedInFlight.delete(unpricedModel)) this.control.wake();
    };
  }

  /** DAILY_CAP_REACHED: the service's cap is lower than ours; no submission until it resets. */
  pauseSubmissionsFor(ms: number): void {
    this.dailyPausedUntil = Math.max(this.dailyPausedUntil, this.clock.now() + ms);
  }

  /**
   * The moderation circuit breaker. Submissions not yet answered count as
   * possibly blocked, so blocked plus unanswered never passes --max-blocked
   * (at most 29): the key's count cannot reach the service's threshold of 30.
   */
  breaker(unanswered: number): 'go' | 'wait' | 'stop' {
    const blocked = this.store.accounting.blockedSince(this.clock.now() - this.clock.scaled(WEEK_MS));
    if (blocked + unanswered < this.limits.maxBlocked) return 'go';
    if (blocked < this.limits.maxBlocked) return 'wait';
    this.control.stop('moderation', `${blocked} submissions were blocked by moderation in the last 7 days; stopping before the service's threshold of 30 costs the key its eligibility. Review the blocked prompts (genbatch status).`);
    return 'stop';
  }
}
