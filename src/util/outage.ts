import { Waiters } from './waiters.js';

/**
 * Whether a remote (the service, a bucket) answers: since when it has
 * answered nothing, when that last ended, and the callers its first answer
 * lets go. Each user decides what counts as no answer and how it looks for
 * the return (the service's probes, the bucket's looks); this is what they
 * share, so both wake their waiters and judge a request sent into an outage
 * the same way.
 */
export class Outage {
  private downSince: number | undefined;
  private lastAnswerAt = Number.NEGATIVE_INFINITY;
  private lastNoAnswerAt = Number.NEGATIVE_INFINITY;
  private endedAt = Number.NEGATIVE_INFINITY;
  private readonly waiters = new Waiters<boolean>();
  private readonly endings = new Set<(since: number | undefined, at: number) => void>();

  constructor(private readonly now: () => number) {}

  /** Since when nothing has answered, once it was called down. */
  get since(): number | undefined {
    return this.downSince;
  }

  get isDown(): boolean {
    return this.downSince !== undefined;
  }

  /** When anything was last answered. */
  get answeredAt(): number {
    return this.lastAnswerAt;
  }

  /** Callers waiting for an answer now. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** A request got no answer at `at`: an outage may have begun (`begin` says it did). */
  noAnswer(at = this.now()): void {
    this.lastNoAnswerAt = Math.max(this.lastNoAnswerAt, at);
  }

  /** Nothing answers, since `at` unless it was down already: true when this began it. */
  begin(at = this.now()): boolean {
    this.noAnswer(at);
    if (this.downSince !== undefined) return false;
    this.downSince = at;
    return true;
  }

  /**
   * Anything answered (an error too): the outage, and any unanswered request
   * seen since the last answer, ends now; `onEnd` hears it, then every
   * waiting caller goes.
   */
  answered(): void {
    const now = this.now();
    const since = this.downSince;
    const missed = since !== undefined || this.lastNoAnswerAt > this.lastAnswerAt;
    this.lastAnswerAt = now;
    this.downSince = undefined;
    if (missed) {
      this.endedAt = now;
      for (const ended of this.endings) ended(since, now);
    }
    if (this.waiters.size > 0) this.waiters.release(true);
  }

  /** Hears each end of missed answers: `since` is the outage's start when it was called down. */
  onEnd(listener: (since: number | undefined, at: number) => void): () => void {
    this.endings.add(listener);
    return () => this.endings.delete(listener);
  }

  /** A request sent at `sentAt` went out before missed answers ended: it was lost to them, and is sent again at once. */
  sentIntoEnded(sentAt: number): boolean {
    return this.endedAt >= sentAt;
  }

  /** Until the next answer (true), or `signal` aborting first (false). */
  untilAnswer(signal?: AbortSignal): Promise<boolean> {
    return this.waiters.wait(signal, false);
  }

  /** Every caller waiting goes now: `true` as if answered (a slow-down is the remote's voice), `false` unanswered (given up). */
  release(answered: boolean): void {
    this.waiters.release(answered);
  }
}
