/**
 * Sees a run go quiet: when nothing has been sent, answered or said for
 * `quietMs` although work is open, it reports what every open item waits for
 * and wakes the scheduler. Quiet is fine when a known wait explains it (the
 * daily cap, a backoff, an outage); otherwise it is a stall, which is a bug.
 */
export interface WatchdogOptions {
  now: () => number;
  quietMs: number;
  /** Open work remains. */
  hasWork: () => boolean;
  /** A known wait with a time to act explains the quiet. */
  explained: () => boolean;
  onQuiet: (quietForMs: number, stalled: boolean) => void;
}

export class Watchdog {
  private last: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: WatchdogOptions) {
    this.last = opts.now();
  }

  /** Something was sent, answered or said. */
  activity(): void {
    this.last = this.opts.now();
  }

  start(): void {
    this.timer = setInterval(() => this.check(), Math.max(50, this.opts.quietMs / 4));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    const { opts } = this;
    const quiet = opts.now() - this.last;
    if (quiet < opts.quietMs || !opts.hasWork()) return;
    // Said once per quiet spell, then again only after as long again.
    this.last = opts.now();
    opts.onQuiet(quiet, !opts.explained());
  }
}
