import { Waiters } from '../util/waiters.js';
/** What a transfer tells its queue as its bytes move. */
export interface TransferProgress {
  /** A body began to arrive (or leave). */
  began(): void;
  /** Some of its bytes moved. */
  moved(): void;
  /** The body is done (or given up): the transfer is between bodies again. */
  ended(): void;
}

interface Running {
  label: string;
  lastMoved: number;
  inBody: boolean;
  /** No byte for `quietMs`: it holds no place, and is reported stalled once, if it is inside a body. */
  quiet: boolean;
  reported: boolean;
}

/** Transfers that have gone silent inside a body: how many, and since when the oldest moved no byte. */
export interface Stalled {
  count: number;
  since: number;
}

/**
 * Transfers at a bounded concurrency, counted by those that move: one that
 * has moved no byte for `quietMs` gives its place to the next waiting one
 * (it takes it back, over the bound, if it moves again). A stalled download
 * holds its connection until its read-idle timeout abandons it, but no other
 * download waits behind it meanwhile.
 */
export class Transfers {
  private readonly waiting: { label: string; start: () => void }[] = [];
  private readonly running = new Set<Running>();
  private readonly idleListeners: (() => void)[] = [];
  private readonly idleWaiters = new Waiters();
  private sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly concurrency: number,
    private readonly quietMs: number,
    private readonly now: () => number,
    /** A transfer went silent inside a body (once per silence). */
    private readonly onStalled: (label: string, since: number) => void = () => {},
    /** A silence reported stalled is over: the transfer moved again, or ended (abandoned at the idle timeout, or failed). */
    private readonly onStallEnded: (label: string, since: number, how: 'moved' | 'ended') => void = () => {},
  ) {}

  /** Waiting for a place. */
  get size(): number {
    return this.waiting.length;
  }

  /** Started and not ended, moving or not. */
  get pending(): number {
    return this.running.size;
  }

  /** Runs `task` once a place is free; it reports its progress so a silent one can give its place up. */
  add(label: string, task: (progress: TransferProgress) => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ label, start: () => this.start(label, task).then(resolve, reject) });
      this.pump();
    });
  }

  /** The transfers silent inside a body now. */
  stalled(): Stalled | undefined {
    let count = 0;
    let since = Infinity;
    for (const r of this.running)
      if (r.quiet && r.inBody) {
        count++;
        since = Math.min(since, r.lastMoved);
      }
    return count ? { count, since } : undefined;
  }

  /** Resolves once nothing runs or waits. */
  onIdle(): Promise<void> {
    if (this.pending === 0 && this.size === 0) return Promise.resolve();
    return this.idleWaiters.wait();
  }

  /** Calls `listener` each time the queue becomes idle. */
  onEachIdle(listener: () => void): void {
    this.idleListeners.push(listener);
  }

  private async start(label: string, task: (progress: TransferProgress) => Promise<void>): Promise<void> {
    const entry: Running = { label, lastMoved: this.now(), inBody: false, quiet: false, reported: false };
    this.running.add(entry);
    this.watch();
    const moved = () => {
      if (entry.reported) this.onStallEnded(label, entry.lastMoved, 'moved');
      entry.lastMoved = this.now();
      entry.quiet = false;
      entry.reported = false;
    };
    try {
      await task({
        began: () => {
          entry.inBody = true;
          moved();
        },
        moved,
        ended: () => {
          entry.inBody = false;
          moved();
        },
      });
    } finally {
      if (entry.reported) this.onStallEnded(label, entry.lastMoved, 'ended');
      this.running.delete(entry);
      this.pump();
      if (this.pending === 0 && this.size === 0) this.becameIdle();
    }
  }

  /** Starts waiting tasks while fewer than `concurrency` of the running ones move. */
  private pump(): void {
    let moving = 0;
    for (const r of this.running) if (!r.quiet) moving++;
    while (moving < this.concurrency && this.waiting.length > 0) {
      this.waiting.shift()!.start();
      moving++;
    }
  }

  /** Looks for silent transfers a few times per `quietMs`, only while some run. */
  private watch(): void {
    if (this.sweep) return;
    this.sweep = setInterval(() => this.look(), Math.max(20, this.quietMs / 4));
    this.sweep.unref();
  }

  private look(): void {
    if (this.running.size === 0) {
      clearInterval(this.sweep);
      this.sweep = undefined;
      return;
    }
    const now = this.now();
    let freed = false;
    for (const r of this.running) {
      if (r.quiet || now - r.lastMoved < this.quietMs) continue;
      r.quiet = true;
      freed = true;
      if (r.inBody && !r.reported) {
        r.reported = true;
        this.onStalled(r.label, r.lastMoved);
      }
    }
    if (freed) this.pump();
  }

  private becameIdle(): void {
    this.idleWaiters.release();
    for (const listener of this.idleListeners) listener();
  }
}
