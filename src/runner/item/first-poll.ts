/**
 * When a new job's first long poll leaves. A poll sent at acceptance waits up
 * to its `wait` and returns before the job ends whenever the job runs longer,
 * so a job of 10 to 90 s (the spec's typical image) costs 2.1 reads on
 * average with 30 s polls. The first poll waits instead for half the
 * shortest run seen of the same model in this run: a job is almost never
 * shorter than that, so no end is learnt later than it happens, and a
 * typical image costs 1.9 reads. Nothing is seen before the first job of a
 * model ends: its first poll leaves at once.
 */
export class FirstPoll {
  private readonly shortest = new Map<string, number>();

  /** At most this long after acceptance (one long poll's wait): a clock that jumps never holds a poll back for long. */
  constructor(private readonly maxDelayMs: () => number) {}

  /**
   * A job of `model`, accepted at `acceptedAt`, was seen ended (completed) at
   * `seenAt`: it ran at most that long. Taken as the shortest when it is; a
   * bound that is too long only means polls that leave a little earlier.
   */
  ended(model: string, acceptedAt: number, seenAt: number): void {
    const ran = Math.max(0, seenAt - acceptedAt);
    const known = this.shortest.get(model);
    if (known === undefined || ran < known) this.shortest.set(model, ran);
  }

  /** When the first poll of a job of `model` accepted at `acceptedAt` may leave. */
  firstAt(model: string, acceptedAt: number): number {
    const shortest = this.shortest.get(model);
    return shortest === undefined ? acceptedAt : acceptedAt + Math.min(shortest / 2, this.maxDelayMs());
  }
}
