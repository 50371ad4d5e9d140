/** The `wait` of a long poll, which the service may cap lower than asked (a 400 on the field `wait`). */
export class PollWait {
  constructor(public seconds: number) {}

  /** Lowers the wait to `max` when the service named it, else halves it; false when it cannot go lower. */
  lower(max: number | undefined): boolean {
    const next = max !== undefined && max < this.seconds ? Math.floor(max) : Math.floor(this.seconds / 2);
    if (next >= this.seconds) return false;
    this.seconds = Math.max(0, next);
    return true;
  }
}
