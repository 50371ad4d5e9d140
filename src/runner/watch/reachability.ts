import { TransportError } from '../../api/index.js';
import { sleep } from '../../util/clock.js';

/**
 * What a request that got no answer (refused, reset, no DNS, timed out) was
 * part of: `outage` when the service answered nothing at all meanwhile (it
 * answers again now: resend at once, and count nothing against the request);
 * `own` when the service answered other requests, so this request's failure
 * is its own (its backoff and count apply); `stopped` when the run stopped
 * first.
 */
export type NoAnswer = 'outage' | 'own' | 'stopped';

export interface ReachabilityOptions {
  now: () => number;
  /** Asks the service something cheap (through its read limit); rejects with TransportError while it is unreachable. */
  probe: (signal: AbortSignal) => Promise<unknown>;
  /** Real milliseconds between probes while nothing answers. */
  probeEveryMs: number;
  /** With nothing answering for this long (real milliseconds), `onGiveUp`. */
  giveUpAfterMs: number;
  /** Aborted when the run stops: every wait ends. */
  signal: AbortSignal;
  onDown(since: number, reason: string): void;
  onUp(since: number): void;
  onGiveUp(since: number, reason: string): void;
}

/**
 * Whether the service answers at all: one per run, shared by every key (they
 * reach the same service). While it does not, submissions pause as a whole
 * and one probe asks, instead of a backoff per item that would run out its
 * resends (and leave paid jobs unread) on a blip. Any answer (an error too)
 * says the service is back, and wakes everything that waits for it.
 */
export class Reachability {
  private lastAnswerAt = -Infinity;
  /** While the service answers nothing: since when, and the last failure's words. */
  private downSince: number | undefined;
  private reason = '';
  /** When an outage was last seen going on: a request sent before then may have been lost to it. */
  private lastDownAt = -Infinity;
  private probing: Promise<void> | undefined;
  private waiters = new Set<(up: boolean) => void>();
  private gaveUp = false;

  constructor(private readonly opts: ReachabilityOptions) {
    opts.signal.addEventListener('abort', () => this.release(false), { once: true });
  }

  /** The service answered a request (any HTTP status). */
  answered(): void {
    this.lastAnswerAt = this.opts.now();
    const since = this.downSince;
    this.downSince = undefined;
    if (since !== undefined) this.opts.onUp(since);
    if (this.waiters.size > 0) this.release(true);
  }

  /** Since when nothing has answered, while that is so. */
  get unreachableSince(): number | undefined {
    return this.downSince;
  }

  get isDown(): boolean {
    return this.downSince !== undefined;
  }

  /** Before a request: at once while the service answers; while it does not, once it answers again (true) or the run stops (false). */
  async ready(signal: AbortSignal): Promise<boolean> {
    if (this.downSince === undefined) return !signal.aborted && !this.gaveUp;
    return this.untilUp(signal);
  }

  /**
   * A request sent at `sentAt` got no answer: was that an outage (then this
   * waits until the service answers again) or the request's own failure?
   * A probe decides: one in flight at a time, whoever asks.
   */
  async noAnswer(sentAt: number, error: unknown, signal: AbortSignal): Promise<NoAnswer> {
    if (!(error instanceof TransportError)) return 'own';
    // Even with answers since it was sent, the outage may have begun after them: the probe (one for every caller) says.
    this.reason = error.message;
    if (!(await this.untilUp(signal))) return 'stopped';
    return this.lastDownAt >= sentAt ? 'outage' : 'own';
  }

  /** Resolves true when the service answers (asking it with one probe at a time), false when the run stops first. */
  private untilUp(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted || this.gaveUp || this.opts.signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const done = (up: boolean) => {
        this.waiters.delete(done);
        signal.removeEventListener('abort', onAbort);
        resolve(up);
      };
      const onAbort = () => done(false);
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(done);
      this.probing ??= this.probeUntilUp().finally(() => (this.probing = undefined));
    });
  }

  private async probeUntilUp(): Promise<void> {
    const { opts } = this;
    const startedAt = opts.now();
    let failures = 0;
    while (this.waiters.size > 0 && !opts.signal.aborted) {
      const sentAt = opts.now();
      try {
        await opts.probe(opts.signal);
        this.answered();
        return;
      } catch (error) {
        if (opts.signal.aborted) return;
        // Any answer, an error one too, is the service's: it is reachable.
        if (!(error instanceof TransportError)) return this.answered();
        if (this.lastAnswerAt > sentAt) return this.release(true);
        this.reason = error.message;
        const now = opts.now();
        this.lastDownAt = now;
        // A pooled connection the service closed fails once on its own: asked again at once on a new one before saying anything.
        if (++failures === 1) continue;
        if (this.downSince === undefined) {
          this.downSince = Math.min(startedAt, now);
          opts.onDown(this.downSince, this.reason);
        }
        if (now - this.downSince >= opts.giveUpAfterMs) {
          this.gaveUp = true;
          opts.onGiveUp(this.downSince, this.reason);
          return this.release(false);
        }
      }
      await sleep(opts.probeEveryMs, opts.signal).catch(() => {});
    }
  }

  private release(up: boolean): void {
    for (const waiter of [...this.waiters]) waiter(up);
  }
}
