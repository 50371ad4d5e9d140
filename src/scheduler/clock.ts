import { KEY_DAY_MS, type Rate } from './limits.js';

/**
 * The run's time, the one place time is scaled: the clock passed in, and the
 * service's durations divided by the time scale (rehearsals on a scaled
 * simulator). Every duration of the service's (a window, a key day, a lease,
 * a backoff) becomes real time here, and nowhere else.
 */
export class RunClock {
  constructor(
    readonly now: () => number,
    readonly timeScale: number,
  ) {}

  /** A duration of the service's time in this run's real time (an arrow: passed around as a function). */
  readonly scaled = (ms: number): number => ms / this.timeScale;

  /** A real duration in the service's time (what a user reads: "10/60s", not "10/1s"). */
  serviceMs(ms: number): number {
    return ms * this.timeScale;
  }

  /** A rate of the service's, its window in this run's real time. */
  rate(r: Rate): Rate {
    return { count: r.count, windowMs: this.scaled(r.windowMs) };
  }

  /** The key day `at` falls in (days since the epoch, UTC), over which the daily cap counts. */
  dayOf(at: number): number {
    return Math.floor(at / this.scaled(KEY_DAY_MS));
  }

  /** When key day `day` begins. */
  dayStart(day: number): number {
    return day * this.scaled(KEY_DAY_MS);
  }
}
