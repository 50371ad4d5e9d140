/**
 * Sees a run go quiet: when nothing has been sent, answered or said for
 * `quietMs` although work is open, it reports what every open item waits for
 * and wakes the scheduler. Quiet is fine when a known wait explains it (the
 * daily cap, a backoff, an outage); otherwise it is a stall, which is a bug.
 */
export interface QuietLook {
  /** Open work remains. */
  hasWork(): boolean;
  /** A known wait with a time to act explains the quiet. */
  explained(): boolean;
  onQuiet(quietForMs: number, stalled: boolean): void;
}

export class Watchdog {
  private last: number;
  private timer: NodeJS.Timeout | undefined;

  /** Built first of the run's parts: every one of them tells it of activity. */
  constructor(
    private readonly now: () => number,
    readonly quietMs: number,
  ) {
    this.last = now();
  }

  /** Something was sent, answered or said. */
  activity(): void {
    this.last = this.now();
  }

  /** Looks every quarter of `quietMs`, with the questions the run's other parts answer. */
  start(look: QuietLook): void {
    this.timer = setInterval(() => this.check(look), Math.max(50, this.quietMs / 4));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(look: QuietLook): void {
    const quiet = this.now() - this.last;
    if (quiet < this.quietMs || !look.hasWork()) return;
    // Said once per quiet spell, then again only after as long again.
    this.last = this.now();
    look.onQuiet(quiet, !look.explained());
  }
}
