import type { Store } from '../../store/index.js';
import { releaseOnce } from '../../util/once.js';
import { KEY_DAY_MS } from '../../scheduler/limits.js';
import type { KeyDayRoom } from '../../coordinator/shared-day.js';
import type { RunClock } from '../../scheduler/clock.js';

/**
 * No submission leaves this close to the end of a key day: its request's
 * latency, with room. A scaled rehearsal's day is short, so there the guard
 * is a thousandth of the day (50 ms at the least): a pause as small, relative
 * to the day, as the real one.
 */
const DAY_END_GUARD_MS = 2_000;
const SCALED_GUARD_MIN_MS = 50;

/**
 * One key's daily credit cap: what its key day has been charged (from the
 * state, so a restart keeps it), the credits of its submissions still
 * unanswered (reserved), and a DAILY_CAP_REACHED pause.
 */
export class DailyCap {
  private reserved = 0;
  /** Credits of items given to this key whose submissions have not reached the credit check yet. */
  private assigned = 0;
  private pausedUntil = 0;
  /** Until when this key's submissions wait for the cap, while they do (Credits says when every key waits). */
  waitingUntil: number | undefined;

  constructor(
    private readonly store: Store,
    readonly fingerprint: string,
    readonly cap: number,
    private readonly clock: RunClock,
    /** With several processes on the key: the day's credits are taken there too, before each submission. */
    readonly shared?: KeyDayRoom | undefined,
  ) {}

  /**
   * 0 when `credits` more fit the key day now; else when they may be sent.
   * The credit check asks without the credits of items given to the key but not yet
   * at the credit check (they queue behind it); the choice of a key asks with them.
   */
  blockedUntil(credits: number, now: number, withAssigned = false): number {
    const day = this.clock.dayOf(now);
    const next = this.clock.dayStart(day + 1);
    const over =
      this.dayEnding(now) ||
      this.store.accounting.chargedOn(day, this.fingerprint) +
        this.reserved +
        (withAssigned ? this.assigned : 0) +
        credits >
        this.cap;
    const until = Math.max(this.pausedUntil, over ? next : 0);
    return until > now ? until : 0;
  }

  /** A submission sent this close to the day's end may be charged on the next (it arrives later): none is sent then. */
  dayEnding(now: number): boolean {
    const guard = Math.min(DAY_END_GUARD_MS, Math.max(SCALED_GUARD_MIN_MS, this.clock.scaled(KEY_DAY_MS) / 1000));
    return this.clock.dayStart(this.clock.dayOf(now) + 1) - now < guard;
  }

  /** True while a submission of `credits` would wait for this key's cap: new items go to another key first. */
  isWaiting(now: number, credits: number): boolean {
    return this.blockedUntil(credits, now, true) > 0;
  }

  /** An item was given to this key: its credits count until its submission reserves them (or it ends without). */
  assign(credits: number): () => void {
    this.assigned += credits;
    return releaseOnce(() => (this.assigned -= credits));
  }

  reserve(credits: number): () => void {
    this.reserved += credits;
    return releaseOnce(() => (this.reserved -= credits));
  }

  /** DAILY_CAP_REACHED: the service's cap for this key is lower than ours; none of its submissions until it resets. */
  pauseFor(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, this.clock.now() + ms);
  }
}
