import type { Rate } from './limits.js';
import { NotSentError, WaitQueue } from './wait-queue.js';

export { NotSentError } from './wait-queue.js';

/**
 * The requests that count in the window: those not answered yet, and the
 * answers of the last window in the order they came (a queue, so a window of
 * 100,000 costs no more per request than one of 10).
 */
class SendWindow {
  private unanswered = 0;
  private readonly answers: number[] = [];
  private head = 0;

  constructor(private readonly windowMs: number) {}

  sent(): void {
    this.unanswered++;
  }

  answered(at: number): void {
    this.unanswered--;
    this.recent(at);
  }

  /** A request that ended without being sent: it never counted at the service. */
  unused(): void {
    this.unanswered--;
  }

  /** An answer at `at`, or an earlier process's send read back after a restart (counted as answered then). */
  recent(at: number): void {
    // In order even if the clock steps back: the window only ever looks at its oldest answer.
    this.answers.push(Math.max(at, this.answers.at(-1) ?? at));
  }

  /** How many count at `now`: answers more than a window old no longer do. */
  count(now: number): number {
    while (this.head < this.answers.length && this.answers[this.head]! + this.windowMs < now) this.head++;
    if (this.head > 1024 && this.head * 2 > this.answers.length) {
      this.answers.splice(0, this.head);
      this.head = 0;
    }
    return this.unanswered + this.answers.length - this.head;
  }

  /** When the `place`-th request counted now leaves the window (one not answered yet counts as answered now); `count` first. */
  freedAt(place: number, now: number): number {
    const answered = this.answers.length - this.head;
    return (place < answered ? this.answers[this.head + place]! : now) + this.windowMs + 1;
  }

  /** When the oldest answer leaves the window; Infinity when none is answered (an answer frees a place). */
  soonestFree(): number {
    return this.head < this.answers.length ? this.answers[this.head]! + this.windowMs + 1 : Infinity;
  }
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
export class RateWindow {
  private readonly window: SendWindow;
  // No permit to carry: a request's place in the window is counted by the window itself.
  private readonly queue = new WaitQueue<undefined>();
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
    this.window = new SendWindow(rate.windowMs);
    for (const at of [...recentSends].sort((a, b) => a - b).slice(-rate.count)) this.window.recent(at);
  }

  /** See Pacer.run: `unused()` gives the request's place back. */
  run<T>(fn: (unused: () => void) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.stopped) return Promise.reject(new NotSentError('not sent: the run is stopping'));
    let unused = false;
    // Called once per request, when it settles either way: it counts until a window after that, unless never sent.
    const sent = this.queue.enqueue(
      () => fn(() => (unused = true)),
      signal,
      () => {
        if (unused) this.window.unused();
        else this.window.answered(this.now());
        this.pump();
      },
    );
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
    const counted = this.window.count(now);
    const place = counted + this.queue.length - this.rate.count;
    if (place < 0) return start;
    // Beyond the requests in the window, the queued ones' own places: a window later each.
    const at =
      place < counted
        ? this.window.freedAt(place, now)
        : (counted > 0 ? this.window.freedAt(counted - 1, now) : now) +
          this.rate.windowMs * Math.ceil((place - counted + 1) / this.rate.count);
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
   * window, never speeds it past its own window. A 0 while this window is
   * full is what the window already holds to: the next request waits for the
   * oldest to leave it, and a share more would cost every full window (6 s a
   * minute at the real pace). A 0 while this window has room says the key is
   * used elsewhere too, or its limit is lower than ours: the queue holds for
   * one request's share of the window, and goes on from there.
   */
  serviceRemaining(remaining: number): void {
    if (remaining === 0 && this.window.count(this.now()) < this.rate.count)
      this.pauseFor(this.rate.windowMs / this.rate.count);
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
      this.window.sent();
      this.queue.send(undefined);
    }
  }

  /** How long the head of the queue must wait: 0 when it may go now. */
  private waitMs(now: number): number {
    if (now < this.pausedUntil) return this.pausedUntil - now;
    if (this.window.count(now) < this.rate.count) return 0;
    return Math.max(1, this.window.soonestFree() - now);
  }
}
