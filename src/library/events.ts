import type { RunEvent } from '../runner/index.js';

/** What `run()` says before its runner exists: the service not answering yet, then the run under way. */
export type StartEvent =
  /** The service answers nothing yet; the run waits for it up to `unreachableMs` (nothing was sent). */
  | { kind: 'service-unreachable'; reason: string; unreachableMs: number }
  /** The run is assembled and its first submission is next: where it reads and writes, and with which keys. */
  | {
      kind: 'started';
      manifest: string;
      state: string;
      outDir: string;
      log: string;
      items: number;
      resumed: boolean;
      rehearsal: boolean;
      keys: string[];
    }
  /** The reader fell behind by more than the buffer holds: the `count` oldest events unread were dropped. */
  | { kind: 'events-dropped'; count: number };

/** Every event `run()` yields: the run's own (see RunEvent) and the start's. */
export type GenbatchEvent = RunEvent | StartEvent;

/**
 * The run's events as an async iterable. It buffers from the start, so a
 * reader that begins its `for await` after `run()` returns misses nothing;
 * the run never waits for a reader: past `limit` unread events the oldest
 * are dropped and the reader is told how many. A reader that stops early
 * (`break`) stops the buffering.
 */
export class EventChannel<E extends { kind: string }> implements AsyncIterable<E | StartEvent> {
  private readonly queue: (E | StartEvent)[] = [];
  private head = 0;
  private dropped = 0;
  private closed = false;
  private waiter: (() => void) | undefined;
  private taken = false;

  constructor(private readonly limit: number) {}

  push(event: E | StartEvent): void {
    if (this.closed) return;
    if (this.queue.length - this.head >= this.limit) {
      this.head++;
      this.dropped++;
    }
    this.queue.push(event);
    this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  /** Events held for the reader and not read yet (at most the limit; none once the reader stopped). */
  get buffered(): number {
    return this.queue.length - this.head;
  }

  [Symbol.asyncIterator](): AsyncIterator<E | StartEvent> {
    if (this.taken) throw new Error('the events of a run can be read once: keep one for await loop');
    this.taken = true;
    return {
      next: () => this.next(),
      return: async () => {
        this.close();
        this.queue.length = 0;
        this.head = 0;
        return { done: true, value: undefined };
      },
    };
  }

  private async next(): Promise<IteratorResult<E | StartEvent>> {
    for (;;) {
      if (this.dropped > 0) {
        const count = this.dropped;
        this.dropped = 0;
        return { done: false, value: { kind: 'events-dropped', count } };
      }
      if (this.head < this.queue.length) {
        const value = this.queue[this.head++]!;
        // Compacted now and then, so a long run's read events do not stay in memory.
        if (this.head > 1024 && this.head * 2 > this.queue.length) {
          this.queue.splice(0, this.head);
          this.head = 0;
        }
        return { done: false, value };
      }
      if (this.closed) return { done: true, value: undefined };
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}
