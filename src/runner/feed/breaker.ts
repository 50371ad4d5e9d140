import { KEY_DAY_MS } from '../../scheduler/limits.js';
import type { Store } from '../../store/index.js';
import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';

const WEEK_MS = 7 * KEY_DAY_MS;

/**
 * The moderation circuit breaker. It counts the account's blocked
 * submissions of the trailing 7 days, whatever key sent them (the service's
 * threshold of 30 is the account's), and submissions not yet answered as
 * possibly blocked, so blocked plus unanswered never reaches --max-blocked.
 */
export class ModerationBreaker {
  /** Blocked submissions the coordinator counts for the run's keys, by every process (refreshed by the run). */
  sharedBlocked = 0;
  /** Feed loops waiting for an answer that may let the breaker go on. */
  private answerWaits = 0;

  constructor(
    private readonly store: Store,
    private readonly clock: RunClock,
    private readonly control: Control,
    private readonly maxBlocked: number,
  ) {}

  private blocked(): number {
    return Math.max(
      this.sharedBlocked,
      this.store.accounting.blockedSince(this.clock.now() - this.clock.scaled(WEEK_MS)),
    );
  }

  /** 'go', 'wait' for answers that may free room, or 'stop' (the run stops) at the threshold. */
  check(unanswered: number): 'go' | 'wait' | 'stop' {
    const blocked = this.blocked();
    if (blocked + unanswered < this.maxBlocked) return 'go';
    if (blocked < this.maxBlocked) return 'wait';
    this.control.askStop(
      'moderation',
      `${blocked} submissions were blocked by moderation in the last 7 days; stopping before the service's threshold of 30 costs the key its eligibility. Review the blocked prompts (genbatch status).`,
    );
    return 'stop';
  }

  /** A feed loop waits for an answer (or any other wake-up): a known wait, which an answered submission ends. */
  waitForAnswer(wait: Promise<void>): Promise<void> {
    this.answerWaits++;
    return wait.finally(() => this.answerWaits--);
  }

  /** Some feed loop waits for an answer: a known wait. */
  get waitingForAnswer(): boolean {
    return this.answerWaits > 0;
  }

  /** A submission was answered with a job: a loop waiting for it looks again. */
  answered(): void {
    if (this.answerWaits > 0) this.control.wake();
  }

  /**
   * The breaker waits for answers this run will never see (submissions held
   * "maybe accepted" for a later run count as possibly blocked): the run
   * stops rather than wait for nothing.
   */
  held(unanswered: number): void {
    this.control.askStop(
      'moderation',
      `${this.blocked()} submissions were blocked by moderation in the last 7 days and ${unanswered} more have no answer yet (each may have been blocked); another would risk the service's threshold of 30. Run the same command again: it resends those with their keys, and goes on once they are answered.`,
    );
  }
}
