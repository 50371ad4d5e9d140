import {
  ApiError,
  ResponseShapeError,
  TransportError,
  backoffMs,
  isTerminalStatus,
  policy,
  type Job,
} from '../api/index.js';
import type { ImageSubmission, VideoSubmission } from '../api/index.js';
import { sleep } from '../util/clock.js';
import type { AttemptRow, ItemRow } from '../store/index.js';
import { NotSentError } from '../scheduler/bucket.js';
import { buildBody } from './bodies.js';
import type { RunContext } from './context.js';
import { InputError } from './inputs.js';
import { idempotencyKey } from './keys.js';
import { keyRefusedNote, type KeyLane } from './lanes.js';

const MAX_QUERY_LATER = 30;
/** Refusals of one job's read (403, 404, …) asked again before the job is left for the next run. */
const KEEP_JOB_AFTER = 2;
/** Network errors and 5xx on a read, retried with backoff before the job is left for the next run. */
const READ_RETRIES = 12;

/** An error as an item records it: its code, and a message that does not say the code again. */
function errorOf(error: unknown): { code: string; message: string } {
  if (error instanceof ApiError) return { code: error.code, message: error.reason };
  const code = (error as { code?: unknown }).code;
  return {
    code: typeof code === 'string' ? code : ((error as Error).name ?? 'ERROR'),
    message: (error as Error).message ?? String(error),
  };
}

/**
 * One item's job, from its attempt to the job's end, holding an in-flight
 * slot of its key's lane throughout. Every change of state is committed
 * before the act it enables; every request goes with the lane's key.
 */
export class JobTask {
  private readonly itemId: string;

  constructor(
    private readonly ctx: RunContext,
    private readonly lane: KeyLane,
    /** The item as it was handed out: its type, model and spec are fixed for the task's life (its state and attempt are read afresh). */
    private readonly fixed: ItemRow,
  ) {
    this.itemId = fixed.id;
  }

  private reuploaded = false;
  /** When this task's own submission was accepted: its job's first poll waits from then (a resumed job is polled at once). */
  private acceptedAt: number | undefined;

  /**
   * After a 400 on an upload-key field, forgets the body's uploads so the next
   * attempt uploads them again (material that expired before use); true when
   * the refused field was an upload key.
   */
  private forgetUploads(body: ImageSubmission & VideoSubmission, field: unknown): boolean {
    if (
      typeof field !== 'string' ||
      !/^(inputs\[\d+\]\.key|imageKey|referenceImageKeys(\[\d+\])?|videoKey)$/.test(field)
    )
      return false;
    const keys = [
      ...(body.inputs ?? []).map((i) => i.key),
      body.imageKey,
      ...(body.referenceImageKeys ?? []),
      body.videoKey,
    ].filter((k): k is string => Boolean(k));
    for (const key of keys) this.ctx.store.uploads.forget(key);
    return keys.length > 0;
  }

  private get item(): ItemRow {
    return this.ctx.store.items.get(this.itemId)!;
  }

  async run(): Promise<void> {
    let releaseSlot: (() => void) | undefined;
    try {
      let attempt =
        this.item.state === 'pending' ? await this.newAttempt() : this.ctx.store.attempts.latest(this.itemId);
      if (!attempt) return;
      // With other processes on the key, one of its shared in-flight slots, from before the submission to the job's end.
      releaseSlot = await this.lane.holdSharedSlot(
        this.fixed.type,
        this.itemId,
        attempt.job_id !== null,
        attempt.job_id !== null ? this.ctx.abort.signal : this.lane.noNewWork,
      );
      if (!releaseSlot) return;
      while (attempt) {
        const jobId = attempt.job_id ?? (await this.submit(attempt));
        if (!jobId) return;
        const job = await this.poll(jobId);
        if (!job) return;
        attempt = await this.ended(attempt, job);
      }
    } finally {
      releaseSlot?.();
      this.ctx.wake();
    }
  }

  private finish(state: 'failed' | 'rejected' | 'blocked', code: string, message: string): undefined {
    if (this.ctx.store.life.finish(this.itemId, state, { code, message }, this.ctx.opts.now()))
      this.final(state, code, message);
    return undefined;
  }

  private final(state: string, code?: string, message?: string): void {
    this.ctx.emit({
      kind: 'item-final',
      itemId: this.itemId,
      state,
      ...(code ? { code } : {}),
      ...(message ? { message } : {}),
    });
  }

  /** Uploads inputs, then commits the attempt and its key: only then may the request leave. */
  private async newAttempt(): Promise<AttemptRow | undefined> {
    const { store, opts } = this.ctx;
    const item = this.item;
    let body: ImageSubmission | VideoSubmission;
    for (;;) {
      const startedAt = opts.now();
      try {
        const { lane } = this;
        if (!(await this.ctx.reachability.ready(lane.noNewWork))) return this.requeue();
        body = await buildBody(this.ctx.spec(item), {
          client: lane.client,
          keyFp: lane.fingerprint,
          store,
          bucket: lane.buckets.upload,
          now: opts.now,
          validityMarginMs: this.ctx.scaled(10 * 60_000),
          inFlight: lane.uploadsInFlight,
          outDir: opts.outDir,
          signal: lane.noNewWork,
        });
        break;
      } catch (error) {
        if (error instanceof NotSentError) return this.requeue();
        if (error instanceof InputError) return this.finish('failed', 'INPUT_ERROR', error.message);
        const noAnswer = await this.ctx.reachability.noAnswer(startedAt, error, this.lane.noNewWork);
        if (noAnswer === 'stopped') return this.requeue();
        if (noAnswer === 'outage') continue;
        const reaction = policy('upload', error);
        if (reaction.do === 'stop-run') {
          // Nothing of the item was sent: it stays pending, for another key or a later run.
          this.refused(reaction, errorOf(error));
          return undefined;
        }
        if (reaction.do === 'wait-and-resend')
          this.lane.buckets.upload.pauseFor((error as { retryAfterMs?: number }).retryAfterMs ?? 1000);
        else {
          const failures = this.ctx.uploadFailures.get(item.id) ?? 0;
          if (failures >= 5 || reaction.do === 'mark-item')
            return this.finish('failed', 'UPLOAD_FAILED', (error as Error).message);
          // Back to pending until the backoff has passed: no slot is held meanwhile.
          this.ctx.uploadFailures.set(item.id, failures + 1);
          return this.requeue(opts.now() + this.ctx.scaled(backoffMs(failures, 1000)));
        }
        if (this.ctx.isStopping()) return this.requeue();
      }
    }
    const n = item.attempt + 1;
    const key = idempotencyKey(store.meta('run_id')!, item.id, item.content_hash, n);
    if (!store.life.startAttempt(item.id, n, key, JSON.stringify(body), opts.now(), this.lane.fingerprint))
      return undefined;
    return store.attempts.latest(item.id);
  }

  private requeue(notBefore = 0): undefined {
    this.ctx.store.life.requeue(this.itemId, this.ctx.opts.now(), notBefore);
    return undefined;
  }

  /** The service refused the key, or the account: the key leaves the run (the others go on), or the run stops. */
  private refused(reaction: { hint: string; scope: 'key' | 'account' }, e: { code: string; message: string }): void {
    if (reaction.scope === 'account') this.ctx.stop('refused', `${e.code}: ${e.message}\n${reaction.hint}`);
    else this.ctx.keyRefused(this.lane, e, reaction.hint);
  }

  /** Sends the attempt's stored body with its key until the service answers; resends only ever reuse that key. */
  private async submit(attempt: AttemptRow): Promise<string | undefined> {
    const { ctx, lane } = this;
    const { store, opts } = ctx;
    const { client } = lane;
    const body = JSON.parse(attempt.body) as ImageSubmission & VideoSubmission;
    const item = this.fixed;
    const price = ctx.price(item);
    // Sent before this run, or resent in it after an answer that left its fate open: a job may exist under its key.
    let mayBeAccepted = attempt.sent_at !== null && (attempt.sent_at < ctx.runStartedAt || attempt.resends > 0);
    let sent = attempt.sent_at !== null;
    let sentAt = 0;
    for (;;) {
      // The attempt stays committed: a resumed run resends the same key. (A budget stop lets the gate decide: what it gave out within the budget goes.)
      if (lane.noNewWork.aborted) return undefined;
      // While nothing answers, the submission waits with its slot (it may be a job in flight already) for the service's return.
      if (!(await ctx.reachability.ready(lane.noNewWork))) return undefined;
      // Paused from another shell: nothing is sent, resends included (a paused run spends nothing new).
      if (!(await ctx.pauseGate.wait(lane.noNewWork))) return undefined;
      const release = await ctx.dailyCapGate(lane, item, price, !sent);
      if (release === 'hand-over') {
        // Never sent, and this key waits for its cap while another has room: the item goes back for that one.
        store.life.requeue(this.itemId, opts.now());
        return undefined;
      }
      if (!release) return undefined;
      const gateDay = ctx.dayOf(opts.now());
      // It waited (for the window, or for its record's commit) past the key day it was let through for: through the gate again, for the new day.
      const dayTurned = () => ctx.dayOf(opts.now()) !== gateDay || lane.cap.dayEnding(opts.now());
      try {
        const job: Job | undefined | 'day-ended' | 'paused' = await lane.buckets.submit.run(async () => {
          if (lane.noNewWork.aborted) return undefined; // queued when the run stopped: not sent (a budget stop lets reserved ones go)
          if (dayTurned()) return 'day-ended';
          // Paused while it waited for its turn: not sent; it waits for resume.
          if (ctx.pauseGate.isPaused) return 'paused';
          // Committed (with the others leaving in this turn) before it leaves; once committed it leaves, interrupt or not, as if on the wire.
          if (
            !(await ctx.sends.record({ id: attempt.item_id, n: attempt.n, now: opts.now(), keyFp: lane.fingerprint }))
          )
            return undefined;
          sent = true;
          // The commit was a turn of the event loop later: the day is asked again right before the request leaves (recorded, it is resent with its key).
          if (dayTurned()) return 'day-ended';
          sentAt = opts.now();
          return this.fixed.type === 'image'
            ? client.submitImage(body, attempt.idempotency_key)
            : client.submitVideo(body, attempt.idempotency_key);
        }, lane.noNewWork);
        if (job === 'day-ended' || job === 'paused') {
          release();
          continue;
        }
        if (!job) {
          release();
          return undefined;
        }
        const charged = job.charged ?? price ?? 0;
        if (job.charged !== undefined) ctx.noteCharge(item.model, job.charged);
        const now = opts.now();
        store.life.recordAccepted(attempt.item_id, attempt.n, job.id, charged, ctx.dayOf(now), now);
        this.acceptedAt = now;
        ctx.jobAccepted(attempt.item_id);
        ctx.emit({ kind: 'submitted', itemId: attempt.item_id, attempt: attempt.n, jobId: job.id, credits: charged });
        release(charged);
        return job.id;
      } catch (error) {
        release();
        // Still waiting for its turn when the run stopped: never sent; the committed attempt is resent by a later run.
        if (error instanceof NotSentError) return undefined;
        const e = errorOf(error);
        if (error instanceof TransportError || error instanceof ResponseShapeError) mayBeAccepted = true;
        // No answer at all: an outage is waited out with the slot held and resent at once with the same key, counting nothing against it.
        const noAnswer = await ctx.reachability.noAnswer(sentAt, error, lane.noNewWork);
        if (noAnswer === 'stopped') return undefined;
        if (noAnswer === 'outage') {
          opts.logger?.warn(
            { item: attempt.item_id, attempt: attempt.n, code: e.code },
            'no answer during an outage: resent with the same key once the service answers',
          );
          continue;
        }
        const reaction = policy('submit', error);
        const retryAfter = (error as { retryAfterMs?: number }).retryAfterMs;
        opts.logger?.warn(
          { item: attempt.item_id, attempt: attempt.n, code: e.code, reaction: reaction.do },
          'submission refused',
        );
        switch (reaction.do) {
          // Waits for a bucket hold the slot (the bucket's queue is the wait); every other wait is a deferral, slot freed.
          case 'wait-and-resend':
            if (reaction.bucket === 'rate')
              lane.buckets.submit.pauseFor(retryAfter ?? lane.limits.submit.windowMs / lane.limits.submit.count);
            else if (reaction.bucket === 'daily-cap') lane.cap.pauseFor(retryAfter ?? ctx.scaled(60 * 60_000));
            else return this.deferResend(attempt, retryAfter ?? ctx.scaled(5000));
            continue;
          case 'resend-later':
            if (attempt.unavailable_resends < reaction.maxResends)
              return this.deferResend(attempt, retryAfter ?? ctx.scaled(10_000), 'unavailable');
            if (store.life.recordRefused(attempt.item_id, attempt.n, e, 'failed', opts.now()))
              this.final('failed', e.code, e.message);
            return undefined;
          case 'resend-with-backoff':
            if (attempt.resends < reaction.maxResends)
              return this.deferResend(attempt, ctx.scaled(backoffMs(attempt.resends)));
            return this.holdMaybeAccepted(attempt, e);
          case 'query-later':
            if (attempt.resends < MAX_QUERY_LATER) return this.deferResend(attempt, retryAfter ?? ctx.scaled(1000));
            return this.holdMaybeAccepted(attempt, e);
          case 'key-conflict': {
            const message = `${e.message} A job may already exist under this attempt's key (sent earlier with another body), so genbatch does not pay again on its own. Look for it in the service's job list; to submit the item anew anyway (a new key, charged again): genbatch retry <manifest> --id ${attempt.item_id}`;
            if (store.life.recordConflict(attempt.item_id, attempt.n, { code: e.code, message }, opts.now()))
              this.final('failed', e.code, message);
            return undefined;
          }
          case 'mark-item':
            if (
              reaction.as === 'rejected' &&
              !this.reuploaded &&
              this.forgetUploads(body, (error as { details?: { field?: unknown } }).details?.field)
            ) {
              // Material that expired before use: upload it again, in a new attempt (the 400 charged nothing).
              this.reuploaded = true;
              ctx.emit({ kind: 'retrying', itemId: attempt.item_id, attempt: attempt.n + 1, reason: 'expired upload' });
              store.life.recordRefused(attempt.item_id, attempt.n, e, 'pending', opts.now());
              const next = await this.newAttempt();
              return next ? this.submit(next) : undefined;
            }
            if (store.life.recordRefused(attempt.item_id, attempt.n, e, reaction.as, opts.now()))
              this.final(reaction.as, e.code, e.message);
            if (reaction.as === 'blocked') {
              ctx.noteBlocked(lane);
              ctx.wake();
            }
            return undefined;
          case 'stop-run':
            // This answer says this request made no job; an earlier send of the same attempt may have.
            if (!mayBeAccepted) store.life.recordRefused(attempt.item_id, attempt.n, e, 'pending', opts.now());
            this.refused(reaction, e);
            if (mayBeAccepted)
              return this.holdMaybeAccepted(attempt, reaction.scope === 'key' ? keyRefusedNote(lane, attempt) : e);
            return undefined;
          case 'new-attempt':
          case 'adapt-wait':
          case 'keep-job':
            // Never answers to a submission; if one ever did, the safe reading is "maybe accepted".
            return this.holdMaybeAccepted(attempt, e);
        }
      }
    }
  }

  /**
   * The submission may have created a job and no answer said which: the item
   * stays `submitting`, its attempt committed, and the next run resends the
   * same key and body. `retry` never replaces such an attempt.
   */
  private holdMaybeAccepted(attempt: AttemptRow, e: { code: string; message: string }): undefined {
    const message = `${e.message} (the submission may have been accepted; run the same command again to resend it with the same key: it is never paid twice)`;
    if (this.ctx.store.life.recordMaybeAccepted(this.itemId, attempt.n, { code: e.code, message }, this.ctx.opts.now()))
      this.final('maybe_accepted', e.code, message);
    return undefined;
  }

  /** The same key goes again after `delayMs`, sent by whichever task the feeder gives it to then: no slot is held meanwhile. */
  private deferResend(
    attempt: AttemptRow,
    delayMs: number,
    after: 'no-answer' | 'unavailable' = 'no-answer',
  ): undefined {
    this.ctx.store.life.deferResend(this.itemId, attempt.n, this.ctx.opts.now() + delayMs, this.ctx.opts.now(), after);
    return undefined;
  }

  /**
   * Long-polls through the read bucket, one poll in flight per job, until the
   * job ends. A paid job is never given up on a read error: when it cannot be
   * read now, the item stays `running` for the next run to ask again.
   */
  private async poll(jobId: string): Promise<Job | undefined> {
    const { ctx } = this;
    const { client } = this.lane;
    let failures = 0;
    const acceptedAt = this.acceptedAt;
    this.acceptedAt = undefined;
    if (acceptedAt !== undefined) {
      const waitMs = ctx.firstPoll.firstAt(this.fixed.model, acceptedAt) - ctx.opts.now();
      // An interrupt ends the wait; the loop below then returns.
      if (waitMs > 0) await ctx.timed(sleep(waitMs, ctx.abort.signal).catch(() => {}));
    }
    for (;;) {
      if (ctx.abort.signal.aborted) return undefined;
      let sentAt = ctx.opts.now();
      try {
        if (!(await ctx.reachability.ready(ctx.abort.signal))) return undefined;
        const job = await this.lane.buckets.read.run(() => {
          sentAt = ctx.opts.now();
          return client.getJob(jobId, ctx.pollWait.seconds, ctx.abort.signal);
        }, ctx.abort.signal);
        failures = 0;
        if (job.status === 'COMPLETED' && acceptedAt !== undefined)
          ctx.firstPoll.ended(this.fixed.model, acceptedAt, ctx.opts.now());
        if (isTerminalStatus(job.status)) return job;
      } catch (error) {
        if (ctx.abort.signal.aborted) return undefined;
        // Nothing answered anything: asked again once the service is back, and the failure is not the job's.
        const noAnswer = await ctx.reachability.noAnswer(sentAt, error, ctx.abort.signal);
        if (noAnswer === 'stopped') return undefined;
        if (noAnswer === 'outage') continue;
        const reaction = policy('read-job', error);
        const e = errorOf(error);
        ctx.opts.logger?.warn({ item: this.itemId, job: jobId, code: e.code, reaction: reaction.do }, 'poll failed');
        switch (reaction.do) {
          case 'stop-run':
            this.refused(reaction, e);
            return this.keepJob(jobId, e);
          case 'adapt-wait':
            if (!ctx.pollWait.lower(reaction.maxSeconds)) return this.keepJob(jobId, e);
            continue;
          case 'wait-and-resend':
            this.lane.buckets.read.pauseFor((error as { retryAfterMs?: number }).retryAfterMs ?? ctx.scaled(1000));
            continue;
          case 'keep-job':
            if (failures >= KEEP_JOB_AFTER) return this.keepJob(jobId, e);
            break;
          default:
            if (failures >= READ_RETRIES) return this.keepJob(jobId, e);
        }
        await ctx.timed(sleep(ctx.scaled(backoffMs(failures++))));
      }
    }
  }

  private keepJob(jobId: string, e: { code: string; message: string }): undefined {
    const message = `the job ${jobId} (paid for) cannot be read now: ${e.message}. Run the same command again to ask for it again; it is not submitted again.`;
    if (this.ctx.store.life.keepJob(this.itemId, { code: e.code, message }, this.ctx.opts.now()))
      this.final('running', e.code, message);
    return undefined;
  }

  /** A job ended: download, or a new attempt after FAILED/EXPIRED while retries remain. */
  private async ended(attempt: AttemptRow, job: Job): Promise<AttemptRow | undefined> {
    const { ctx } = this;
    const { store, opts } = ctx;
    const now = opts.now();
    ctx.emit({
      kind: 'job-ended',
      itemId: attempt.item_id,
      jobId: job.id,
      status: job.status,
      ...(job.error ? { code: job.error.code } : {}),
    });
    if (job.status === 'COMPLETED') {
      if (
        store.life.recordEnded(
          attempt.item_id,
          attempt.n,
          { jobId: job.id, status: 'completed', refunded: 0, refundDay: 0 },
          now,
        )
      )
        ctx.startDownload(attempt.item_id, job.id, job);
      return undefined;
    }
    const status = job.status === 'EXPIRED' ? 'expired' : 'failed';
    const code = job.error?.code ?? job.status;
    const error = { code, ...(job.error?.message ? { message: job.error.message } : {}) };
    store.life.recordEnded(
      attempt.item_id,
      attempt.n,
      { jobId: job.id, status, refunded: job.refunded, refundDay: ctx.dayOf(attempt.accepted_at ?? now), error },
      now,
    );
    if (store.attempts.failedCount(attempt.item_id) > opts.maxRetries)
      return this.finish('failed', code, job.error?.message ?? `the job ended ${job.status}`);
    ctx.emit({ kind: 'retrying', itemId: attempt.item_id, attempt: attempt.n + 1, reason: code });
    this.requeue();
    if (ctx.isStopping()) return undefined;
    return this.newAttempt();
  }
}
