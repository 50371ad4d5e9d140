import { KEY_DAY_MS, keyDayOf } from '../../scheduler/limits.js';

/** The run's time: the clock passed in, and the service's durations divided by the time scale (rehearsals on a scaled simulator). */
export class RunClock {
  constructor(
    readonly now: () => number,
    readonly timeScale: number,
  ) {}

  /** A duration of the service's time in this run's real time (an arrow: passed around as a function). */
  readonly scaled = (ms: number): number => ms / this.timeScale;

  /** The key day `at` falls in, over which the daily cap counts. */
  dayOf(at: number): number {
    return keyDayOf(at, this.timeScale);
  }

  /** When key day `day` begins. */
  dayStart(day: number): number {
    return day * this.scaled(KEY_DAY_MS);
  }
}
