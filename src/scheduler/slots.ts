import PQueue from 'p-queue';

/**
 * In-flight slots for one job type: a task holds its slot from submission
 * until its job ends (downloads do not hold one). Tasks are added only when a
 * slot is free, so a 100,000-item manifest is never 100,000 promises.
 */
export class Slots {
  private readonly queue: PQueue;

  constructor(readonly capacity: number) {
    this.queue = new PQueue({ concurrency: capacity });
  }

  get busy(): number {
    return this.queue.pending + this.queue.size;
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

  /** Calls `listener` each time a task has ended and its slot is counted free. */
  onTaskEnd(listener: () => void): void {
    this.queue.on('next', listener);
  }

  onIdle(): Promise<void> {
    return this.queue.onIdle();
  }
}
