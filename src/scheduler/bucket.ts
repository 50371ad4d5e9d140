import Bottleneck from 'bottleneck';
import type { Rate } from './limits.js';

/**
 * Paces one kind of request (submissions, reads, upload grants) to a rate.
 * Requests are spaced evenly (minTime) a little wider than window/count: the
 * service counts a sliding window, and bottleneck's reservoir refresh could
 * let twice the count through around a refresh. A 429 pauses the bucket
 * (reservoir 0) for Retry-After; queued requests then resume, still spaced.
 */
export class Bucket {
  readonly spacingMs: number;
  private readonly limiter: Bottleneck;
  private resumeTimer: NodeJS.Timeout | undefined;
  private pausedUntil = 0;
  /** Actual send times, newest last: the service's sliding window is checked on these. */
  private readonly sent: number[] = [];
  private gate: Promise<void> = Promise.resolve();

  constructor(
    private readonly rate: Rate,
    private readonly now: () => number,
    /** Times of recent sends (read back from the state after a restart): the first new one waits its turn. */
    recentSends: readonly number[] = [],
  ) {
    this.spacingMs = Math.ceil((rate.windowMs / rate.count) * 1.01) + 1;
    this.limiter = new Bottleneck({ minTime: this.spacingMs, maxConcurrent: null });
    this.sent.push(...recentSends.slice(-rate.count));
    const last = recentSends.at(-1); // read back in time order
    if (last !== undefined) this.pauseFor(last + this.spacingMs - this.now());
  }

  /**
   * Runs `fn` when the rate allows: bottleneck spaces the requests, and a last
   * check on the actual send times holds one back should a stalled event loop
   * have bunched them (timers fire late, not early).
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.limiter.schedule(async () => {
      const turn = this.gate.then(() => this.waitForWindow());
      this.gate = turn;
      await turn;
      return fn();
    });
  }

  private async waitForWindow(): Promise<void> {
    for (;;) {
      while (this.sent.length > this.rate.count) this.sent.shift();
      const oldest = this.sent.length === this.rate.count ? this.sent[0]! : undefined;
      const wait = oldest === undefined ? 0 : oldest + this.rate.windowMs + 1 - this.now();
      if (wait <= 0) break;
      await new Promise((r) => setTimeout(r, wait));
    }
    this.sent.push(this.now());
  }

  /** Holds every queued request for `ms` (a 429's Retry-After); longer pauses win. */
  pauseFor(ms: number): void {
    if (ms <= 0) return;
    const until = this.now() + ms;
    if (until <= this.pausedUntil) return;
    this.pausedUntil = until;
    clearTimeout(this.resumeTimer);
    void this.limiter.updateSettings({ reservoir: 0 });
    this.resumeTimer = setTimeout(() => {
      this.pausedUntil = 0;
      void this.limiter.updateSettings({ reservoir: null });
    }, ms);
  }

  async stop(): Promise<void> {
    clearTimeout(this.resumeTimer);
    await this.limiter.stop({ dropWaitingJobs: true }).catch(() => {});
  }
}
