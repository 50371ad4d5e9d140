/** Waits that have their time (first polls, backoffs) under way now: the watchdog counts them as reasons for quiet. */
export class TimedWaits {
  private under = 0;

  get count(): number {
    return this.under;
  }

  /** `wait`, counted while it lasts. */
  timed<T>(wait: Promise<T>): Promise<T> {
    this.under++;
    return wait.finally(() => this.under--);
  }
}
