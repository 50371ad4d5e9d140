import { NotSentError, WaitQueue } from '../scheduler/wait-queue.js';
import type { Rate } from '../scheduler/limits.js';
import type { Pacer } from '../scheduler/pacer.js';
import type { Coordinator, SendKind } from './postgres.js';

/**
 * How long a full window is waited before the database is asked again, at
 * most: other processes' answers free it too, and they are not heard here.
 * A quarter of one request's share of the window, so a place is taken
 * within a small part of the time it stays free.
 */
const askEveryMs = (rate: Rate) => Math.max(5, Math.min(1_000, rate.windowMs / rate.count / 4));
/** While the database cannot be reached: ask again this often. */
const UNREACHABLE_RETRY_MS = 1_000;

/**
 * A key's sliding window of one kind of request, shared by every process
 * through the coordinator: a request leaves once the database grants it a
 * place in the window (one statement under a lock), and counts there until
 * one window after its answer. Queued requests wait in one FIFO behind a
 * single pump, as in the local RateWindow, so a pause holds them all and an
 * interrupt cancels them unsent. While the database is unreachable, nothing
 * is sent: requests wait, and `onUnreachable` says so once per outage.
 */
export class SharedWindow implements Pacer {
  private readonly queue = new WaitQueue<string>();
  private pumping = false;
  private stopped = false;
  private pausedUntil = 0;
  private wakeSleep: (() => void) | undefined;
  private down = false;

  constructor(
    private readonly coordinator: Coordinator,
    private readonly keyFp: string,
    private readonly kind: SendKind,
    private readonly rate: Rate,
    private readonly onUnreachable: (reachable: boolean, message: string) => void,
    private readonly random: () => number = Math.random,
  ) {}

  run<T>(fn: (unused: () => void) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.stopped) return Promise.reject(new NotSentError('not sent: the run is stopping'));
    let unused = false;
    const sent = this.queue.enqueue(
      () => fn(() => (unused = true)),
      signal,
      (sendId) => {
        (unused ? this.coordinator.unused(sendId) : this.coordinator.answered(sendId)).catch(() => {});
        this.kick();
      },
    );
    void this.pump();
    return sent;
  }

  get waiting(): number {
    return this.queue.length;
  }

  pauseFor(ms: number): void {
    void this.hold(ms);
  }

  private hold(ms: number): Promise<void> {
    if (!(ms > 0)) return Promise.resolve();
    const held = ms + this.random() * ms * 0.1;
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + held);
    // Every process on the key holds too; if the database cannot be told, this one still does.
    return this.coordinator.pause(this.keyFp, this.kind, held).catch(() => {});
  }

  /** As the local RateWindow: a 0 the shared window accounts for adds no wait; with room in it, the key is used outside the coordinator, and every process holds a share. */
  async serviceRemaining(remaining: number): Promise<void> {
    if (remaining !== 0) return;
    const full = await this.coordinator.sendsInWindow(this.keyFp, this.kind, this.rate.windowMs).then(
      (n) => n >= this.rate.count,
      () => false,
    );
    if (!full) await this.hold(this.rate.windowMs / this.rate.count);
  }

  stop(): void {
    this.stopped = true;
    this.queue.failAll();
    this.kick();
  }

  private kick(): void {
    this.wakeSleep?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(1, ms));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleep = done;
    });
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0 && !this.stopped) {
        const paused = this.pausedUntil - Date.now();
        if (paused > 0) {
          await this.sleep(paused);
          continue;
        }
        let permit: Awaited<ReturnType<Coordinator['acquireSend']>>;
        try {
          permit = await this.coordinator.acquireSend(this.keyFp, this.kind, this.rate);
          if (this.down) this.onUnreachable(true, 'the coordinator is reachable again');
          this.down = false;
        } catch (error) {
          if (!this.down)
            this.onUnreachable(
              false,
              `${(error as Error).message}; ${this.kind === 'submit' ? 'submissions' : this.kind === 'read' ? 'reads' : 'upload grants'} wait until it answers again (nothing paid is lost)`,
            );
          this.down = true;
          await this.sleep(UNREACHABLE_RETRY_MS);
          continue;
        }
        if ('waitMs' in permit) {
          await this.sleep(Math.min(permit.waitMs, askEveryMs(this.rate)));
          continue;
        }
        // Cancelled while the place was granted: it goes back unused.
        if (this.stopped || !this.queue.send(permit.id)) this.coordinator.unused(permit.id).catch(() => {});
      }
    } finally {
      this.pumping = false;
    }
  }
}
