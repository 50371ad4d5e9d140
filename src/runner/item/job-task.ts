import type { Job } from '../../api/index.js';
import type { AttemptRow, ItemRow } from '../../store/index.js';
import type { Reservation } from '../keys/credits.js';
import type { KeyLane } from '../keys/lanes.js';
import { newAttempt } from './attempt.js';
import type { ItemTask, JobTaskDeps } from './job-deps.js';
import { pollJob } from './poll.js';
import { Submission } from './submission.js';

export type { JobTaskDeps } from './job-deps.js';

/** A job that completed, its end recorded: its outputs are to be downloaded. */
export interface CompletedJob {
  readonly jobId: string;
  readonly job: Job;
}

/**
 * One item's job, from its attempt to the job's end, holding an in-flight
 * slot of its key's lane throughout: the first stage of the job's life (see
 * ../life.ts). Every change of state is committed before the act it enables;
 * every request goes with the lane's key. Its phases are their own modules:
 * the attempt (uploads, then the key committed), the submission (the gates,
 * the send, the refusals), the poll.
 */
export class JobTask implements ItemTask {
  readonly itemId: string;
  private readonly submission = new Submission(this);

  constructor(
    readonly deps: JobTaskDeps,
    readonly lane: KeyLane,
    /** The item as it was handed out: its type, model and spec are fixed for the task's life (its state and attempt are read afresh). */
    readonly fixed: ItemRow,
    /** The attempt's credits: its price, and its reservation against the budget and the key's cap. */
    readonly credits: Reservation,
  ) {
    this.itemId = fixed.id;
  }

  now(): number {
    return this.deps.clock.now();
  }

  item(): ItemRow {
    return this.deps.store.items.get(this.itemId)!;
  }

  /** The job, to its end: the completed job, or nothing (the item failed, waits, or the run stops). */
  async run(): Promise<CompletedJob | undefined> {
    let releaseSlot: (() => void) | undefined;
    try {
      let attempt =
        this.item().state === 'pending' ? await newAttempt(this) : this.deps.store.attempts.latest(this.itemId);
      if (!attempt) return undefined;
      // With other processes on the key, one of its shared in-flight slots, from before the submission to the job's end.
      releaseSlot = await this.lane.holdSharedSlot(
        this.fixed.type,
        this.itemId,
        attempt.job_id !== null,
        attempt.job_id !== null ? this.deps.control.abort.signal : this.lane.noNewWork,
      );
      if (!releaseSlot) return undefined;
      while (attempt) {
        // A job accepted before (a resumed one) is polled at once; this task's own, once its first poll is due.
        const accepted =
          attempt.job_id !== null
            ? { jobId: attempt.job_id, acceptedAt: undefined }
            : await this.submission.submit(attempt);
        if (!accepted) return undefined;
        const job = await pollJob(this, accepted.jobId, accepted.acceptedAt);
        if (!job) return undefined;
        this.deps.control.emit({
          kind: 'job-ended',
          itemId: this.itemId,
          jobId: job.id,
          status: job.status,
          ...(job.error ? { code: job.error.code } : {}),
        });
        if (job.status === 'COMPLETED') return this.completed(attempt, job);
        attempt = await this.failed(attempt, job);
      }
      return undefined;
    } finally {
      releaseSlot?.();
      this.credits.close();
      this.deps.control.wake();
    }
  }

  endWithoutOutput(state: 'failed' | 'rejected' | 'blocked', code: string, message: string): undefined {
    if (this.deps.store.lifecycle.endWithoutOutput(this.itemId, state, { code, message }, this.now()))
      this.final(state, code, message);
    return undefined;
  }

  final(state: string, code?: string, message?: string): void {
    this.deps.control.emit({
      kind: 'item-final',
      itemId: this.itemId,
      state,
      ...(code ? { code } : {}),
      ...(message ? { message } : {}),
    });
  }

  requeue(notBefore = 0): undefined {
    this.deps.store.lifecycle.requeue(this.itemId, this.now(), notBefore);
    return undefined;
  }

  /** The job completed: its end recorded, it goes on to its outputs (unless another process recorded it first). */
  private completed(attempt: AttemptRow, job: Job): CompletedJob | undefined {
    const ended = { jobId: job.id, status: 'completed' as const, refunded: 0, refundDay: 0 };
    return this.deps.store.lifecycle.recordEnded(attempt.item_id, attempt.n, ended, this.now())
      ? { jobId: job.id, job }
      : undefined;
  }

  /** The job ended FAILED or EXPIRED: a new attempt while retries remain, else the item ends failed. */
  private async failed(attempt: AttemptRow, job: Job): Promise<AttemptRow | undefined> {
    const { deps } = this;
    const { store, clock } = deps;
    const now = clock.now();
    const status = job.status === 'EXPIRED' ? 'expired' : 'failed';
    const code = job.error?.code ?? job.status;
    const error = { code, ...(job.error?.message ? { message: job.error.message } : {}) };
    const refundDay = clock.dayOf(attempt.accepted_at ?? now);
    store.lifecycle.recordEnded(
      attempt.item_id,
      attempt.n,
      { jobId: job.id, status, refunded: job.refunded, refundDay, error },
      now,
    );
    if (job.refunded > 0) deps.report.refunded(this.credits.tags, job.refunded);
    if (store.attempts.failedCount(attempt.item_id) > deps.settings.maxRetries)
      return this.endWithoutOutput('failed', code, job.error?.message ?? `the job ended ${job.status}`);
    deps.control.emit({ kind: 'retrying', itemId: attempt.item_id, attempt: attempt.n + 1, reason: code });
    this.requeue();
    if (deps.control.isStopping()) return undefined;
    return newAttempt(this);
  }
}
