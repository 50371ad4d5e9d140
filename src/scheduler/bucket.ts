import type { Rate } from './limits.js';
import { NotSentError, WaitQueue } from './wait-queue.js';

export { NotSentError } from './wait-queue.js';

interface Entry {
  /** When its answer came back; until then the service may count it at any moment. */
  answeredAt: number | undefined;
}

/**
 * Paces one kind of request (submissions, reads, upload grants) to the
 * service's sliding window: a request goes as soon as fewer than `count`
 * requests lie in the last window, so the first window's requests go at once.
 *
 * The service counts a request when it arrives, some time between our send
 * and its answer; a request therefore counts here from its send until one
 * window after its answer came back. That margin is the requests' own
 * latency, measured, not guessed, and it holds on a loaded machine too.
 *
 * Requests wait in one FIFO queue released by a single pump, so a pause (a
 * 429's Retry-After) holds every queued request, and a queued request can be
 * cancelled (an interrupt) before anything is sent.
 */
export class Bucket {
  private readonly entries: Entry[] = [];
  private readonly queue = new WaitQueue<Entry>();
  private pausedUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly rate: Rate,
    private readonly now: () => number,
    /** Send times of recent requests (read back from the state after a restart): they still count in the window. */
    recentSends: readonly number[] = [],
    private readonly random: () => number = Math.random,
  ) {
    for (const at of recentSends.slice(-rate.count)) this.entries.push({ answeredAt: at });
  }

  /** Runs `fn` when the window allows; rejects with NotSentError, without calling `fn`, if `signal` aborts or the bucket stops first. */
  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.stopped) return Promise.reject(new NotSentError('not sent: the run is stopping'));
    const sent = this.queue.enqueue(fn, signal, (entry) => {
      entry.answeredAt = this.now();
      this.pump();
    });
    this.pump();
    return sent;
  }

  /** How many requests wait for their turn (never sent yet). */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * When a request queued now would leave: at once while the window has room
   * for it behind those already queued, else when the request whose place it
   * takes leaves the window (one not answered yet counts as answered now).
   */
  leavesAt(now: number): number {
    const start = Math.max(now, this.pausedUntil);
    const place = this.counted(now) + this.queue.length - this.rate.count;
    if (place < 0) return start;
    const frees = this.entries.map((e) => (e.answeredAt ?? now) + this.rate.windowMs + 1).sort((a, b) => a - b);
    // Beyond the requests in the window, the queued ones' own places: a window later each.
    const at = place < frees.length ? frees[place]! : (frees.at(-1) ?? now) + this.rate.windowMs * Math.ceil((place - frees.length + 1) / this.rate.count);
    return Math.max(start, at);
  }

  /**
   * Holds every queued request for `ms` (a 429's Retry-After), plus up to 10%
   * jitter so that several processes sharing a key do not all return at once.
   */
  pauseFor(ms: number): void {
    if (!(ms > 0)) return;
    const until = this.now() + ms + this.random() * ms * 0.1;
    if (until <= this.pausedUntil) return;
    this.pausedUntil = until;
    this.pump();
  }

  /**
   * What the service's `X-RateLimit-Remaining` said. It only ever slows the
   * bucket, never speeds it past its own window. A 0 while this window is
   * full is what the window already holds to: the next request waits for the
   * oldest to leave it, and a share more would cost every full window (6 s a
   * minute at the real pace). A 0 while this window has room says the key is
   * used elsewhere too, or its limit is lower than ours: the queue holds for
   * one request's share of the window, and goes on from there.
   */
  serviceRemaining(remaining: number): void {
    if (remaining === 0 && this.counted(this.now()) < this.rate.count) this.pauseFor(this.rate.windowMs / this.rate.count);
  }

  /** Rejects every queued request (never sent) and accepts no more. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.queue.failAll();
  }

  private pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0 && !this.stopped) {
      const wait = this.waitMs(this.now());
      if (wait > 0) {
        // Infinity: every slot is held by a request not answered yet; its answer pumps again.
        if (wait !== Infinity) this.timer = setTimeout(() => this.pump(), Math.ceil(wait));
        return;
      }
      // It counts from its send until one window after its answer.
      const entry: Entry = { answeredAt: undefined };
      this.entries.push(entry);
      this.queue.send(entry);
    }
  }

  /** How many requests count in the window at `now`: requests answered more than a window ago no longer do. */
  private counted(now: number): number {
    for (let i = 0; i < this.entries.length; ) {
      const at = this.entries[i]!.answeredAt;
      if (at !== undefined && at + this.rate.windowMs < now) this.entries.splice(i, 1);
      else i++;
    }
    return this.entries.length;
  }

  /** How long the head of the queue must wait: 0 when it may go now. */
  private waitMs(now: number): number {
    if (now < this.pausedUntil) return this.pausedUntil - now;
    const { count, windowMs } = this.rate;
    if (this.counted(now) < count) return 0;
    let soonest = Infinity;
    for (const e of this.entries) if (e.answeredAt !== undefined) soonest = Math.min(soonest, e.answeredAt + windowMs + 1 - now);
    return Math.max(1, soonest);
  }
}
