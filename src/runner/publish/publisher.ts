import PQueue from 'p-queue';
import type { Logger } from '../../log/logger.js';
import { bucketPolicy, BucketError, type Publishing } from '../../sink/index.js';
import type { Store, Unpublished } from '../../store/index.js';
import type { Control } from '../core/control.js';
import type { StagedCopy } from '../copies/copier.js';
import type { SavedOutput } from '../item/download-task.js';

/** Publications under way at once: uploads share the machine's link with the downloads. */
const AT_ONCE = 4;

/** What the publisher is given. */
export interface PublisherDeps {
  readonly store: Store;
  readonly control: Control;
  readonly publishing: Publishing;
  readonly now: () => number;
  /** While this many bytes of saved outputs wait to be published, no new submission leaves. */
  readonly maxUnpublishedBytes: number;
  readonly logger?: Logger | undefined;
}

/**
 * Publishes every saved output and web copy to the bucket, oldest first, a
 * few at once: the last stage of the job's life (see ../life.ts), and the
 * second durable step of each file (see BucketSink). The bucket's
 * faults are ridden out by the sink's one policy; a publication that still
 * fails for the bucket's sake (past --unreachable-minutes, a denial, no
 * bucket) stops the run (exit 4), with what was saved kept for the same
 * command. Saved files waiting to be published are bounded (in bytes, on the
 * local disk): past the bound, submissions wait for the backlog to shrink.
 */
export class Publisher {
  /** Oldest first; one tried again goes before the others (a higher priority). */
  private readonly queue = new PQueue({ concurrency: AT_ONCE });
  private readonly ownFailures = new Map<string, number>();
  private waitingBytes = 0;
  private stopped = false;

  constructor(private readonly deps: PublisherDeps) {
    // Idle: the feed loops and the watchdog look again (the backlog's bound, the run's end).
    this.queue.on('idle', () => this.deps.control.wake());
  }

  /** What an earlier run left unpublished (and this one could not publish) is tried again. */
  start(): void {
    const { store } = this.deps;
    store.publications.clearFailures();
    for (const out of store.publications.waiting()) this.enqueue(out);
  }

  /**
   * An output just saved: it joins the queue. One recorded as published
   * already (saved again after a look that could not find it) is put through
   * too: the HEAD finds its object, and its new local file is removed.
   */
  saved(output: SavedOutput): void {
    const { itemId, jobId, idx, path, bytes, sha256, contentType } = output;
    this.enqueue({ itemId, jobId, output: idx, path, bytes, sha256, contentType, copy: false });
  }

  /** A web copy just staged and recorded: it joins the queue. */
  copied({ itemId, jobId, idx, path, bytes, sha256 }: StagedCopy): void {
    this.enqueue({ itemId, jobId, output: idx, path, bytes, sha256, contentType: null, copy: true });
  }

  /** Saved outputs wait past the bound: no new submission leaves until the backlog shrinks. */
  get full(): boolean {
    return !this.stopped && this.waitingBytes > this.deps.maxUnpublishedBytes;
  }

  /** Whether publications are under way or waiting (the watchdog counts it as a known wait). */
  get busy(): boolean {
    const more = !this.stopped && !this.deps.control.abort.signal.aborted && this.queue.size > 0;
    return this.queue.pending > 0 || more;
  }

  /** Once every output is published, or publishing stopped for this run. */
  onIdle(): Promise<void> {
    return this.queue.onIdle();
  }

  private enqueue(out: Unpublished): void {
    this.waitingBytes += out.bytes;
    this.add(out);
  }

  /** Queued to publish; one tried again goes first. Once publishing stopped or the run aborts, nothing more is sent. */
  private add(out: Unpublished, again = false): void {
    void this.queue.add(
      async () => {
        if (this.stopped || this.deps.control.abort.signal.aborted) return;
        await this.publishOne(out);
      },
      { priority: again ? 1 : 0 },
    );
  }

  private async publishOne(out: Unpublished): Promise<void> {
    const { store, control, publishing, now } = this.deps;
    const startedAt = now();
    try {
      const url = await publishing.publish(out, control.abort.signal);
      // The local file goes before the record: a run killed between the two leaves an object the next run
      // recognises (its HEAD), not a copy of a recorded output that no run would ever remove.
      if (this.stillAsVerified(out)) await publishing.dropLocal(out.path);
      store.publications.published(out, url, now());
      this.gone(out);
      const { itemId, jobId, output, bytes } = out;
      const copy = out.copy ? { copy: out.path } : {};
      control.emit({ kind: 'published', itemId, jobId, output, ...copy, url, bytes, ms: now() - startedAt });
    } catch (error) {
      if (control.abort.signal.aborted) return;
      this.failed(out, error);
    }
  }

  /** The row still holds the bytes just verified in the bucket (not a file saved again since). */
  private stillAsVerified(out: Unpublished): boolean {
    const { store } = this.deps;
    const rows = out.copy ? store.webCopies.ofOutput(out.jobId, out.output) : store.outputFiles.ofJob(out.jobId);
    const row = rows.find((r) => (out.copy ? r.path === out.path : r.idx === out.output));
    return row?.sha256 === out.sha256;
  }

  private failed(out: Unpublished, error: unknown): void {
    const { control, logger, store } = this.deps;
    const fault =
      error instanceof BucketError
        ? error
        : new BucketError((error as Error).message, 'failed', 'PUBLISH_FAILED', { cause: error });
    const key = `${out.jobId}/${out.output}/${out.path}`;
    const failures = fault.fault === 'failed' ? (this.ownFailures.get(key) ?? 0) + 1 : 0;
    if (failures) this.ownFailures.set(key, failures);
    const reaction = bucketPolicy('publish', fault, failures);
    if (reaction.do === 'stage-again') {
      // An output's download brings its file back and queues it again; a copy is made again.
      if (out.copy) store.webCopies.forget({ job_id: out.jobId, idx: out.output, path: out.path });
      this.gone(out, false);
      return;
    }
    const { code, message } = fault;
    const copy = out.copy ? { copy: out.path } : {};
    const retry = reaction.do === 'try-again';
    control.emit({
      kind: 'publish-failed',
      itemId: out.itemId,
      jobId: out.jobId,
      output: out.output,
      ...copy,
      code,
      retry,
    });
    logger?.warn({ item: out.itemId, output: out.path, code, error: message }, 'publication failed');
    // Stopped: what waits stays in the state (recorded as waiting) for the same command.
    if (reaction.do === 'stop-run') this.stop(message);
    else if (reaction.do === 'leave-to-next-run') {
      // Kept locally, recorded with why: the next run tries it again.
      store.publications.failed(out, message);
      this.gone(out, false);
    } else this.add(out, true);
  }

  /** Publishing cannot go on in this run: no new submissions; what was saved stays for the same command. */
  private stop(reason: string): void {
    if (this.stopped) return;
    this.stopped = true;
    const waiting = this.deps.store.publications.counts().waiting;
    this.deps.control.askStop(
      'publishing',
      `outputs cannot be published to ${this.deps.publishing.location}: ${reason}. No new submissions; jobs already paid for were polled and saved. ${waiting === 1 ? '1 file (an output or a web copy) waits' : `${waiting} files (outputs and web copies) wait`} in ${this.deps.publishing.staging}: fix it and run the same command again to publish them (nothing is paid again).`,
    );
    // What is queued is dropped: the same command publishes it from the state.
    this.queue.clear();
  }

  /** An output left the backlog (published, or left for a later run): the bound may let submissions go on. */
  private gone(out: Unpublished, published = true): void {
    const wasFull = this.full;
    this.waitingBytes -= out.bytes;
    if (!published) this.ownFailures.delete(`${out.jobId}/${out.output}/${out.path}`);
    if (wasFull && !this.full) this.deps.control.wake();
  }
}
