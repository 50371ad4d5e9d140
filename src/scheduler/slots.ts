import PQueue from 'p-queue';

/**
 * In-flight slots for one job type: a task holds its slot from submission
 * until its job ends (downloads do not hold one). Tasks are added only when a
 * slot is free, so a 100,000-item manifest is never 100,000 promises.
 */
export class Slots {
  private readonly queue: PQueue;
  /** Slots held with no task in them: a job the service may be running, which this run cannot see. */
  private held = 0;
  private readonly holds = new Set<NodeJS.Timeout>();
  private readonly endListeners: (() => void)[] = [];

  constructor(readonly capacity: number) {
    this.queue = new PQueue({ concurrency: capacity });
  }

  get busy(): number {
    return this.queue.pending + this.queue.size + this.held;
  }

  /**
   * Holds a slot with no task for `ms`: a submission that may have created a
   * job no answer named (held "maybe accepted" for a later run) may be
   * running on the service all that while, and the service counts it.
   */
  holdFor(ms: number): void {
    this.held++;
    this.queue.concurrency = Math.max(1, this.capacity - this.held);
    const timer = setTimeout(() => this.letGo(timer), ms);
    timer.unref();
    this.holds.add(timer);
  }

  /** The run ends: what it held is let go with it. */
  stop(): void {
    for (const timer of this.holds) clearTimeout(timer);
    this.holds.clear();
    this.held = 0;
  }

  private letGo(timer: NodeJS.Timeout): void {
    if (!this.holds.delete(timer)) return;
    this.held--;
    this.queue.concurrency = Math.max(1, this.capacity - this.held);
    for (const listener of this.endListeners) listener();
  }

  get free(): boolean {
    return this.busy < this.capacity;
  }

  /** Starts a task in a free slot; the caller checks `free` first. */
  start(task: () => Promise<void>): Promise<void> {
    return this.queue.add(task);
  }

  /** Resolves when a running task ends. */
  async nextFree(): Promise<void> {
    if (this.free) return;
    await new Promise<void>((resolve) => this.queue.once('next', () => resolve()));
  }

  /** Calls `listener` each time a task has ended (or a hold ran out) and its slot is counted free. */
  onTaskEnd(listener: () => void): void {
    this.queue.on('next', listener);
    this.endListeners.push(listener);
  }

  onIdle(): Promise<void> {
    return this.queue.onIdle();
  }
}
