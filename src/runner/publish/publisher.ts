import type { Logger } from '../../log/logger.js';
import type { Publishing } from '../../sink/index.js';
import type { Store, Unpublished } from '../../store/index.js';
import type { Control } from '../core/control.js';

/** Publications under way at once: uploads share the machine's link with the downloads. */
const AT_ONCE = 4;
/** The first backoff after a slow-down or no answer, and the longest: doubled each time in between. */
const FIRST_BACKOFF_MS = 250;
const LONGEST_BACKOFF_MS = 15_000;
/** Tries of one output that fails for a reason of its own (not the bucket's health) before the run leaves it to the next. */
const OWN_FAILURES = 3;

export interface PublisherDeps {
  readonly store: Store;
  readonly control: Control;
  readonly publishing: Publishing;
  readonly now: () => number;
  /** With the bucket answering nothing (or only "slow down") for this long (real ms), the run stops (exit 4). */
  readonly unreachableMs: number;
  /** While this many bytes of saved outputs wait to be published, no new submission leaves. */
  readonly maxWaitingBytes: number;
  readonly logger?: Logger | undefined;
}

/**
 * Publishes every saved output to the bucket, oldest first, a few at once:
 * the second durable step of each output (see BucketSink). A bucket that
 * slows down or answers nothing is backed off, and waited out like the
 * service: past `unreachableMs` without a success the run stops (exit 4), as
 * it does at once when the bucket refuses the credentials. Saved outputs
 * waiting to be published are bounded (in bytes, on the local disk): past the
 * bound, submissions wait for the backlog to shrink.
 */
export class Publisher {
  private readonly queue: Unpublished[] = [];
  private readonly ownFailures = new Map<string, number>();
  private running = 0;
  private waitingBytes = 0;
  private troubleSince: number | undefined;
  private backoffMs = 0;
  private resumeAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly deps: PublisherDeps) {}

  /** What an earlier run left unpublished (and this one could not publish) is tried again. */
  start(): void {
    const { store } = this.deps;
    store.publications.clearFailures();
    for (const out of store.publications.waiting()) this.enqueue(out);
    this.pump();
  }

  /** An output just saved: it joins the queue. */
  saved(jobId: string, idx: number): void {
    const row = this.deps.store.outputs.ofJob(jobId).find((o) => o.idx === idx);
    if (!row?.sha256 || row.path === null || row.bytes === null || row.published_at !== null) return;
    this.enqueue({ ...row, path: row.path, bytes: row.bytes, sha256: row.sha256 });
    this.pump();
  }

  /** Saved outputs wait past the bound: no new submission leaves until the backlog shrinks. */
  get full(): boolean {
    return !this.stopped && this.waitingBytes > this.deps.maxWaitingBytes;
  }

  /** What the run waits for while the bucket takes nothing: said with each backoff (the live line, the log). */
  private get waitReason(): string {
    const waiting = this.queue.length + this.running;
    const since = new Date(this.troubleSince ?? this.deps.now()).toISOString();
    return `${this.deps.publishing.location} to take ${waiting} saved output${waiting === 1 ? '' : 's'} (none taken since ${since}; the run exits 4 past --unreachable-minutes)`;
  }

  /** Whether publications are under way or waiting (the watchdog counts it as a known wait). */
  get busy(): boolean {
    const more = !this.stopped && !this.deps.control.abort.signal.aborted && this.queue.length > 0;
    return this.running > 0 || more;
  }

  /** Once every output is published, or publishing stopped for this run. */
  onIdle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private enqueue(out: Unpublished): void {
    this.queue.push(out);
    this.waitingBytes += out.bytes;
  }

  private pump(): void {
    if (this.stopped || this.deps.control.abort.signal.aborted) {
      this.settle();
      return;
    }
    const wait = this.resumeAt - this.deps.now();
    if (wait > 0) {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, wait);
      return;
    }
    while (this.running < AT_ONCE && this.queue.length > 0) {
      const out = this.queue.shift()!;
      this.running++;
      void this.publishOne(out).finally(() => {
        this.running--;
        this.pump();
      });
    }
    this.settle();
  }

  private async publishOne(out: Unpublished): Promise<void> {
    const { store, control, publishing, now } = this.deps;
    const startedAt = now();
    try {
      const url = await publishing.publish({ ...out, contentType: out.content_type }, control.abort.signal);
      // The local copy goes before the record: a run killed between the two leaves an object the next run
      // recognises (its HEAD), not a copy of a recorded output that no run would ever remove.
      if (this.stillAsVerified(out)) await publishing.dropLocal(out.path);
      store.publications.published(out, url, now());
      this.gone(out);
      this.troubleSince = undefined;
      this.backoffMs = 0;
      const { item_id: itemId, job_id: jobId, idx: output, bytes } = out;
      control.emit({ kind: 'published', itemId, jobId, output, url, bytes, ms: now() - startedAt });
    } catch (error) {
      if (control.abort.signal.aborted) return;
      this.failed(out, error);
    }
  }

  /** The output's row still holds the bytes just verified in the bucket (not a copy downloaded again since). */
  private stillAsVerified(out: Unpublished): boolean {
    const row = this.deps.store.outputs.ofJob(out.job_id).find((o) => o.idx === out.idx);
    return row?.sha256 === out.sha256;
  }

  private failed(out: Unpublished, error: unknown): void {
    const { control, logger } = this.deps;
    const {
      fault = 'failed',
      code = 'PUBLISH_FAILED',
      message,
    } = error as {
      fault?: string;
      code?: string;
      message: string;
    };
    if (code === 'NOT_STAGED') {
      // Its local copy was found lost: the download that brings it back queues it again.
      this.gone(out, false);
      return;
    }
    const retry = this.triesAgain(out, fault, code);
    control.emit({ kind: 'publish-failed', itemId: out.item_id, jobId: out.job_id, output: out.idx, code, retry });
    logger?.warn({ item: out.item_id, output: out.path, code, error: message }, 'publication failed');
    if (fault === 'denied' || fault === 'no-bucket') {
      this.queue.unshift(out);
      this.stop(message);
    } else if (!retry) {
      // Kept locally, recorded with why: the next run tries it again.
      this.deps.store.publications.failed(out, message);
      this.gone(out, false);
    } else {
      this.queue.unshift(out);
      if (fault !== 'failed') this.backOff(message);
    }
  }

  /** Whether this run tries the output again: the bucket's trouble always, its own failure a few times, a taken name never. */
  private triesAgain(out: Unpublished, fault: string, code: string): boolean {
    if (fault === 'slow-down' || fault === 'unreachable') return true;
    if (fault !== 'failed' || code === 'NAME_TAKEN') return false;
    const key = `${out.job_id}/${out.idx}`;
    const failures = (this.ownFailures.get(key) ?? 0) + 1;
    this.ownFailures.set(key, failures);
    return failures < OWN_FAILURES;
  }

  /** The bucket slows down or answers nothing: every publication waits, longer each time, up to the run's patience. */
  private backOff(message: string): void {
    const { control, now, unreachableMs } = this.deps;
    this.troubleSince ??= now();
    const troubledMs = now() - this.troubleSince;
    if (troubledMs >= unreachableMs) {
      this.stop(`the bucket has not taken an output for ${Math.round(troubledMs / 1000)} s (${message})`);
      return;
    }
    // Publications that were under way together fail together: one backoff for them all, not one doubling each.
    if (now() < this.resumeAt) return;
    this.backoffMs = Math.min(LONGEST_BACKOFF_MS, this.backoffMs ? this.backoffMs * 2 : FIRST_BACKOFF_MS);
    this.resumeAt = now() + this.backoffMs;
    control.emit({ kind: 'waiting', reason: this.waitReason, untilMs: this.resumeAt });
  }

  /** Publishing cannot go on in this run: no new submissions; what was saved stays for the same command. */
  private stop(reason: string): void {
    if (this.stopped) return;
    this.stopped = true;
    const waiting = this.deps.store.publications.counts().waiting;
    this.deps.control.stop(
      'publishing',
      `outputs cannot be published to ${this.deps.publishing.location}: ${reason}. No new submissions; jobs already paid for were polled and saved. ${waiting} output(s) wait in ${this.deps.publishing.staging}: fix it and run the same command again to publish them (nothing is paid again).`,
    );
    this.settle();
  }

  /** An output left the backlog (published, or left for a later run): the bound may let submissions go on. */
  private gone(out: Unpublished, published = true): void {
    const wasFull = this.full;
    this.waitingBytes -= out.bytes;
    if (!published) this.ownFailures.delete(`${out.job_id}/${out.idx}`);
    if (wasFull && !this.full) this.deps.control.wake();
  }

  private settle(): void {
    if (this.busy) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
    this.deps.control.wake();
  }
}
