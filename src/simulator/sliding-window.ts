/** A sliding-window log: at most `limit` events in any `windowMs`, as the service counts them. */
export class SlidingWindow {
  private readonly times: number[] = [];

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  private prune(now: number): void {
    while (this.times.length > 0 && this.times[0]! <= now - this.windowMs) this.times.shift();
  }

  /** Records an event if one fits; otherwise says how long until one does. */
  take(now: number): { ok: true; remaining: number } | { ok: false; retryAfterMs: number } {
    this.prune(now);
    if (this.times.length >= this.limit) {
      return { ok: false, retryAfterMs: this.times[0]! + this.windowMs - now };
    }
    this.times.push(now);
    return { ok: true, remaining: this.limit - this.times.length };
  }

  count(now: number): number {
    this.prune(now);
    return this.times.length;
  }
}
