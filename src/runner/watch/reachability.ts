import { Outage } from '../../util/outage.js';
import { setMaxListeners } from 'node:events';
import { TransportError } from '../../api/index.js';

/**
 * What a request that got no answer (refused, reset, no DNS, timed out) was
 * part of: `outage` when the service answered nothing at all meanwhile (it
 * answers again now: resend at once, and count nothing against the request);
 * `own` when the service answered other requests, so this request's failure
 * is its own (its backoff and count apply); `stopped` when the run stopped
 * first.
 */
export type NoAnswer = 'outage' | 'own' | 'stopped';

/** What the service's reachability is built with. */
export interface ReachabilityOptions {
  now: () => number;
  /** Asks the service something cheap (through its read limit), within a short timeout; rejects with TransportError while it is unreachable. */
  probe: (signal: AbortSignal) => Promise<unknown>;
  /** Real milliseconds between probes while nothing answers (a probe may still wait for its answer: they overlap). */
  probeEveryMs: number;
  /** With nothing answering for this long (real milliseconds), `onGiveUp`. */
  giveUpAfterMs: number;
  /**
   * A request not answered this long after it should have been, with nothing
   * answered since it was sent, makes the service suspect: a service that
   * reads requests and answers none (a black hole) fails nothing on its own.
   */
  silentMs: number;
  /** When the oldest request under way was sent, among those overdue by `silentMs` (any key's client). */
  overdueSince: (now: number, silentMs: number) => number | undefined;
  /** Gives up the requests overdue by `lateMs` (each then fails as no answer, and is sent again): how many. */
  abandonOverdue: (now: number, lateMs: number) => number;
  /** Requests were given up as lost while the service answered others. */
  onLost?: (count: number) => void;
  /** Aborted when the run stops: every wait ends. */
  signal: AbortSignal;
  onDown(since: number, reason: string): void;
  /** The service answers again after an outage: requests sent before `at` are abandoned by the caller, to be sent again. */
  onUp(since: number, at: number): void;
  onGiveUp(since: number, reason: string): void;
}

/**
 * Whether the service answers at all: one per run, shared by every key (they
 * reach the same service). While it does not, submissions pause as a whole
 * and probes ask, instead of a backoff per item that would run out its
 * resends (and leave paid jobs unread) on a blip. Any answer (an error too)
 * says the service is back, and wakes everything that waits for it. A
 * service that goes silent without failing anything (requests read, never
 * answered) is suspected from its overdue requests and probed the same way.
 */
export class Reachability {
  /** Since when the service answers nothing, and the callers its first answer lets go (the bucket's patience uses one too). */
  private readonly outage: Outage;
  /** The last failure's words, while the service answers nothing. */
  private reason = '';
  private probing: Promise<void> | undefined;
  private gaveUp = false;
  private readonly silenceWatch: NodeJS.Timeout;

  constructor(private readonly options: ReachabilityOptions) {
    this.outage = new Outage(options.now);
    this.outage.onEnd((since, at) => {
      if (since !== undefined) options.onUp(since, at);
    });
    options.signal.addEventListener('abort', () => this.outage.release(false), { once: true });
    this.silenceWatch = setInterval(() => this.lookForSilence(), Math.max(100, options.silentMs / 4));
    this.silenceWatch.unref();
    options.signal.addEventListener('abort', () => clearInterval(this.silenceWatch), { once: true });
  }

  /** The service answered a request (any HTTP status). */
  answered(): void {
    this.outage.answered();
  }

  /** Since when nothing has answered, while that is so. */
  get unreachableSince(): number | undefined {
    return this.outage.since;
  }

  get isDown(): boolean {
    return this.outage.isDown;
  }

  /** Probes are asking whether the service answers (it failed a request, or went silent): a known wait. */
  get isProbing(): boolean {
    return this.probing !== undefined;
  }

  /** The watch of silence ends (the run is over). */
  stop(): void {
    clearInterval(this.silenceWatch);
  }

  /** Before a request: at once while the service answers; while it does not, once it answers again (true) or the run stops (false). */
  async ready(signal: AbortSignal): Promise<boolean> {
    if (!this.outage.isDown) return !signal.aborted && !this.gaveUp;
    return this.untilUp(signal);
  }

  /**
   * A request sent at `sentAt` got no answer: was that an outage (then this
   * waits until the service answers again) or the request's own failure?
   * A probe decides: one round of probes at a time, whoever asks.
   */
  async noAnswer(sentAt: number, error: unknown, signal: AbortSignal): Promise<NoAnswer> {
    if (!(error instanceof TransportError)) return 'own';
    // Even with answers since it was sent, the outage may have begun after them: the probe (one for every caller) says.
    this.reason = error.message;
    if (!(await this.untilUp(signal))) return 'stopped';
    return this.outage.sentIntoEnded(sentAt) ? 'outage' : 'own';
  }

  /** A request overdue while nothing has answered for as long: the service may have gone silent; probes tell. */
  private lookForSilence(): void {
    if (this.probing || this.gaveUp || this.options.signal.aborted) return;
    const now = this.options.now();
    const since = this.options.overdueSince(now, this.options.silentMs);
    if (since === undefined) return;
    if (now - this.outage.answeredAt < this.options.silentMs) {
      // The service answers others: a request this late was lost on its own (a silence that ended swallowed it).
      const lost = this.options.abandonOverdue(now, 2 * this.options.silentMs);
      if (lost > 0) this.options.onLost?.(lost);
      return;
    }
    this.reason = `no answer for ${((now - since) / 1000).toFixed(1)} s`;
    void this.untilUp(this.options.signal);
  }

  /** Resolves true when the service answers (probing it until then), false when the run stops first. */
  private untilUp(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted || this.gaveUp || this.options.signal.aborted) return Promise.resolve(false);
    const up = this.outage.untilAnswer(signal);
    this.probing ??= this.probeUntilUp().finally(() => (this.probing = undefined));
    return up;
  }

  /**
   * A probe every `probeEveryMs` until one is answered; they overlap, so the
   * service's return is seen within one interval even when earlier probes
   * were swallowed. The first failure is asked again at once before the
   * service is called down (a keep-alive connection it closed fails once).
   */
  private async probeUntilUp(): Promise<void> {
    const { options } = this;
    const round = new ProbeRound(options.now(), options.signal);
    try {
      while (this.outage.waiting > 0 && !options.signal.aborted && !round.settled) {
        void this.probeOnce(round);
        await round.next(options.probeEveryMs);
        const since = this.outage.since;
        if (since !== undefined && options.now() - since >= options.giveUpAfterMs) {
          this.gaveUp = true;
          options.onGiveUp(since, this.reason);
          return this.outage.release(false);
        }
      }
    } finally {
      round.end();
    }
  }

  private async probeOnce(round: ProbeRound): Promise<void> {
    const { options } = this;
    const sentAt = options.now();
    try {
      await options.probe(round.signal);
      round.settle();
      this.answered();
    } catch (error) {
      if (round.settled || options.signal.aborted) return;
      // Any answer, an error one too, is the service's: it is reachable.
      const answeredSince = this.outage.answeredAt > sentAt;
      if (!(error instanceof TransportError) || answeredSince) {
        round.settle();
        return answeredSince ? this.outage.release(true) : this.answered();
      }
      this.reason = error.message;
      const now = options.now();
      this.outage.noAnswer(now);
      if (++round.failures >= 2 && this.outage.begin(Math.min(round.startedAt, now)))
        options.onDown(this.outage.since!, this.reason);
      // The first failure is asked again at once; the others wait for the interval.
      if (round.failures === 1) round.wakeUp();
    }
  }
}

/** One round of probes: its failures, the wake-up of its loop, and the abort of the probes still out once it is settled. */
class ProbeRound {
  failures = 0;
  settled = false;
  private readonly controller = new AbortController();
  private wake: () => void = () => {};

  constructor(
    readonly startedAt: number,
    private readonly runSignal: AbortSignal,
  ) {
    // Probes overlap (one an interval, each waiting up to its timeout): each listens for the round's end, twice.
    setMaxListeners(256, this.controller.signal);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Until `ms` pass, the round is settled (or woken), or the run stops; the timer goes with the wait. */
  async next(ms: number): Promise<void> {
    if (this.settled || this.runSignal.aborted) return;
    let timer: NodeJS.Timeout | undefined;
    const stop = () => this.wake();
    this.runSignal.addEventListener('abort', stop, { once: true });
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      timer = setTimeout(resolve, ms);
    });
    clearTimeout(timer);
    this.runSignal.removeEventListener('abort', stop);
  }

  wakeUp(): void {
    this.wake();
  }

  settle(): void {
    this.settled = true;
    this.wake();
  }

  end(): void {
    this.controller.abort();
  }
}
