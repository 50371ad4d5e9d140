import type { SentRecord, Store } from '../../store/index.js';

interface Waiting {
  record: SentRecord;
  resolve: (mayLeave: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Records the submissions that are about to leave in one turn of the event
 * loop in one transaction: a window's burst (10 a key, 30 for three keys)
 * costs one fsync, not one each, and its last request leaves that much
 * sooner. Each request still leaves only once its own record is committed.
 */
export class SendBatch {
  private waiting: Waiting[] = [];

  constructor(private readonly store: Store) {}

  /** Resolves once the record is committed: true when the attempt may leave (see Lifecycle.recordSent). */
  record(record: SentRecord): Promise<boolean> {
    return new Promise((resolve, reject) => {
      // setImmediate, not a microtask: every task that reaches its send in this turn joins the batch first.
      if (this.waiting.length === 0) setImmediate(() => this.commit());
      this.waiting.push({ record, resolve, reject });
    });
  }

  private commit(): void {
    const batch = this.waiting;
    this.waiting = [];
    let results: boolean[];
    try {
      results = this.store.lifecycle.recordSentAll(batch.map((w) => w.record));
    } catch (error) {
      // Nothing of the batch was committed: none of its requests leaves.
      for (const w of batch) w.reject(error);
      return;
    }
    for (const [i, w] of batch.entries()) w.resolve(results[i]!);
  }
}
