import {
  ApiError,
  ResponseShapeError,
  TransportError,
  isTerminalStatus,
  policy,
  waitMs,
  type Job,
  type Reaction,
} from '../api/index.js';
import type { ImageSubmission, VideoSubmission } from '../api/index.js';
import { sleep } from '../util/clock.js';
import type { AttemptRow, ErrorNote, ItemRow } from '../store/index.js';
import type { ItemSpec } from '../manifest/index.js';
import { NotSentError } from '../scheduler/bucket.js';
import { buildBody } from './bodies.js';
import type { Logger } from '../log/logger.js';
import type { RunClock } from './clock.js';
import type { Control } from './control.js';
import type { Reservation } from './credits.js';
import type { FirstPoll } from './first-poll.js';
import type { PauseGate } from './pause-gate.js';
import type { PollWait } from './poll-wait.js';
import type { Reachability } from './reachability.js';
import type { SendBatch } from './send-batch.js';
import type { Store } from '../store/index.js';
import { InputError } from './inputs.js';
import { idempotencyKey } from './keys.js';
import { keyRefusedNote, type JobType, type KeyLane } from './lanes.js';

/** What a submission's sends so far say of it. */
interface SendState {
  /** A job may exist under its key (an earlier send got no answer that says otherwise). */
  mayBeAccepted: boolean;
  /** Recorded as sent at least once: it may no longer go to another key. */
  sent: boolean;
  /** When its latest send left. */
  sentAt: number;
}

/** An error as an item records it: its code, and a message that does not say the code again. */
function errorOf(error: unknown): { code: string; message: string } {
  if (error instanceof ApiError) return { code: error.code, message: error.reason };
  const code = (error as { code?: unknown }).code;
  return {
    code: typeof code === 'string' ? code : ((error as Error).name ?? 'ERROR'),
    message: (error as Error).message ?? String(error),
  };
}

/** What a job task uses of the run: built once by the run, shared by every task. */
export interface JobTaskDeps {
  readonly store: Store;
  readonly clock: RunClock;
  /** Its events, wake-ups and stop; its abort ends polls (an interrupt). */
  readonly control: Control;
  /** Whether the service answers at all: requests wait for it, and a request that got no answer asks it what that was. */
  readonly reachability: Reachability;
  /** Open unless another shell paused the run: every submission passes it before it leaves. */
  readonly pauseGate: PauseGate;
  /** Where a submission's record is committed before it leaves, with the others of its turn. */
  readonly sends: SendBatch;
  /** The long poll's wait, lowered for the whole run when the service refuses it. */
  readonly pollWait: PollWait;
  /** When a new job's first poll leaves: learnt from the model's shortest job so far. */
  readonly firstPoll: FirstPoll;
  readonly settings: {
    readonly outDir: string;
    readonly maxRetries: number;
    /** When this run began: an attempt sent before it may have been accepted then. */
    readonly runStartedAt: number;
    readonly logger?: Logger | undefined;
  };
  /** What the task tells the run: each is applied in one place there. */
  readonly report: {
    /** The service charged this for a job of `model`: a bound for the next unpriced ones. */
    charged(model: string, credits: number): void;
    /** A job of an item with these budgeted tags was refunded: their room grows again. */
    refunded(tags: readonly string[], credits: number): void;
    /** The item's submission was answered with a job. */
    accepted(itemId: string): void;
    /** The job completed: its outputs are to be downloaded. */
    completed(itemId: string, jobId: string, job: Job): void;
    /** The service refused the key (it leaves the run; the run stops when none is left) or the account (the run stops). */
    refused(lane: KeyLane, error: ErrorNote, reaction: Extract<Reaction, { do: 'stop-run' }>): void;
    /** A submission of the key was blocked: every process on the key counts it (with a coordinator). */
    blocked(lane: KeyLane): void;
    /** Whether a key other than `lane` could take a submission of `type` costing `credits` now (one never sent may go there). */
    otherKeyHasRoom(lane: KeyLane, type: JobType, credits: number): boolean;
    /** A wait that has its time (a first poll's, a backoff's): the watchdog counts it as a reason for quiet. */
    timed<T>(wait: Promise<T>): Promise<T>;
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
    private readonly ctx: JobTaskDeps,
    private readonly lane: KeyLane,
    /** The item as it was handed out: its type, model and spec are fixed for the task's life (its state and attempt are read afresh). */
    private readonly fixed: ItemRow,
    /** The attempt's credits: its price, and its reservation against the budget and the key's cap. */
    private readonly credits: Reservation,
  ) {
    this.itemId = fixed.id;
  }

  private now(): number {
    return this.ctx.clock.now();
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
        attempt.job_id !== null ? this.ctx.control.abort.signal : this.lane.noNewWork,
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
      this.credits.close();
      this.ctx.control.wake();
    }
  }

  private finish(state: 'failed' | 'rejected' | 'blocked', code: string, message: string): undefined {
    if (this.ctx.store.life.finish(this.itemId, state, { code, message }, this.now())) this.final(state, code, message);
    return undefined;
  }

  private final(state: string, code?: string, message?: string): void {
    this.ctx.control.emit({
      kind: 'item-final',
      itemId: this.itemId,
      state,
      ...(code ? { code } : {}),
      ...(message ? { message } : {}),
    });
  }

  /** Uploads inputs, then commits the attempt and its key: only then may the request leave. */
  private async newAttempt(): Promise<AttemptRow | undefined> {
    const { store, clock, settings } = this.ctx;
    const item = this.item;
    let body: ImageSubmission | VideoSubmission;
    for (;;) {
      const startedAt = clock.now();
      try {
        const { lane } = this;
        if (!(await this.ctx.reachability.ready(lane.noNewWork))) return this.requeue();
        body = await buildBody(JSON.parse(item.spec) as ItemSpec, {
          client: lane.client,
          keyFp: lane.fingerprint,
          store,
          bucket: lane.buckets.upload,
          now: clock.now,
          validityMarginMs: clock.scaled(10 * 60_000),
          inFlight: lane.uploadsInFlight,
          outDir: settings.outDir,
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
          this.ctx.report.refused(this.lane, errorOf(error), reaction);
          return undefined;
        }
        if (reaction.do !== 'wait-and-resend') return this.uploadFailed(reaction, error);
        const upload = this.lane.limits.upload;
        this.lane.buckets.upload.pauseFor(waitMs(reaction, 0, error, clock.scaled) ?? upload.windowMs / upload.count);
        if (this.ctx.control.isStopping()) return this.requeue();
      }
    }
    const n = item.attempt + 1;
    const key = idempotencyKey(store.meta('run_id')!, item.id, item.content_hash, n);
    if (!store.life.startAttempt(item.id, n, key, JSON.stringify(body), clock.now(), this.lane.fingerprint))
      return undefined;
    return store.attempts.latest(item.id);
  }

  /** An upload failed: the item waits (pending, no slot held) for its backoff; the last failure the policy allows ends it. */
  private uploadFailed(reaction: Reaction, error: unknown): undefined {
    const { clock, store } = this.ctx;
    // Counted in the state: a resumed run goes on from the same count.
    const failures = this.item.upload_failures;
    if (reaction.do !== 'resend-with-backoff' || failures >= reaction.maxResends)
      return this.finish('failed', 'UPLOAD_FAILED', (error as Error).message);
    const now = clock.now();
    store.life.uploadFailed(this.itemId, now, now + waitMs(reaction, failures, error, clock.scaled)!);
    return undefined;
  }

  private requeue(notBefore = 0): undefined {
    this.ctx.store.life.requeue(this.itemId, this.now(), notBefore);
    return undefined;
  }

  /** Sends the attempt's stored body with its key until the service answers; resends only ever reuse that key. */
  private async submit(attempt: AttemptRow): Promise<string | undefined> {
    const body = JSON.parse(attempt.body) as ImageSubmission & VideoSubmission;
    // Sent before this run, or resent in it after an answer that left its fate open: a job may exist under its key.
    const send: SendState = {
      mayBeAccepted:
        attempt.sent_at !== null && (attempt.sent_at < this.ctx.settings.runStartedAt || attempt.resends > 0),
      sent: attempt.sent_at !== null,
      sentAt: 0,
    };
    for (;;) {
      if (!(await this.throughGates(send.sent))) return undefined;
      let job: Job | undefined | 'again';
      try {
        job = await this.sendOnce(attempt, body, send);
      } catch (error) {
        this.credits.release();
        const next = await this.refusal(attempt, body, error, send);
        if (next === 'again') continue;
        return next;
      }
      if (job === 'again' || !job) {
        this.credits.release();
        if (job === 'again') continue;
        return undefined;
      }
      return this.accepted(attempt, job);
    }
  }

  /**
   * Waits until the submission may leave: the service answers, the run is not
   * paused, and its credits are reserved. False when it does not leave now
   * (the run stops, or the item goes back for another key).
   */
  private async throughGates(sent: boolean): Promise<boolean> {
    const { ctx, lane } = this;
    // The attempt stays committed: a resumed run resends the same key. (A budget stop lets the gate decide: what it gave out within the budget goes.)
    if (lane.noNewWork.aborted) return false;
    // While nothing answers, the submission waits with its slot (it may be a job in flight already) for the service's return.
    if (!(await ctx.reachability.ready(lane.noNewWork))) return false;
    // Paused from another shell: nothing is sent, resends included (a paused run spends nothing new).
    if (!(await ctx.pauseGate.wait(lane.noNewWork))) return false;
    // An attempt never sent may go to another key that has room rather than wait for this one's cap.
    const gate = await this.credits.reserve(
      sent ? undefined : (credits) => ctx.report.otherKeyHasRoom(lane, this.fixed.type, credits),
    );
    if (gate === 'hand-over') {
      // Never sent, and this key waits for its cap while another has room: the item goes back for that one.
      ctx.store.life.requeue(this.itemId, this.now());
      return false;
    }
    return gate === 'reserved';
  }

  /** One send through the key's submit bucket: the job, undefined (not sent: the run stops), or 'again' (through the gates again). */
  private async sendOnce(attempt: AttemptRow, body: ImageSubmission & VideoSubmission, send: SendState) {
    const { ctx, lane } = this;
    const { clock } = ctx;
    const gateDay = clock.dayOf(clock.now());
    // It waited (for the window, or for its record's commit) past the key day it was let through for: through the gate again, for the new day.
    const dayTurned = () => clock.dayOf(clock.now()) !== gateDay || lane.cap.dayEnding(clock.now());
    return lane.buckets.submit.run(async (): Promise<Job | undefined | 'again'> => {
      if (lane.noNewWork.aborted) return undefined; // queued when the run stopped: not sent (a budget stop lets reserved ones go)
      if (dayTurned()) return 'again';
      // Paused while it waited for its turn: not sent; it waits for resume.
      if (ctx.pauseGate.isPaused) return 'again';
      // Committed (with the others leaving in this turn) before it leaves; once committed it leaves, interrupt or not, as if on the wire.
      const record = { id: attempt.item_id, n: attempt.n, now: clock.now(), keyFp: lane.fingerprint };
      if (!(await ctx.sends.record(record))) return undefined;
      send.sent = true;
      // The commit was a turn of the event loop later: the day is asked again right before the request leaves (recorded, it is resent with its key).
      if (dayTurned()) return 'again';
      send.sentAt = clock.now();
      return this.fixed.type === 'image'
        ? lane.client.submitImage(body, attempt.idempotency_key)
        : lane.client.submitVideo(body, attempt.idempotency_key);
    }, lane.noNewWork);
  }

  /** The service answered with a job: its charge is recorded, its credits settled. */
  private accepted(attempt: AttemptRow, job: Job): string {
    const { ctx } = this;
    const charged = job.charged ?? this.credits.price ?? 0;
    if (job.charged !== undefined) ctx.report.charged(this.fixed.model, job.charged);
    const now = this.now();
    ctx.store.life.recordAccepted(attempt.item_id, attempt.n, job.id, charged, ctx.clock.dayOf(now), now);
    this.acceptedAt = now;
    ctx.report.accepted(attempt.item_id);
    ctx.control.emit({
      kind: 'submitted',
      itemId: attempt.item_id,
      attempt: attempt.n,
      jobId: job.id,
      credits: charged,
    });
    this.credits.settle(charged);
    return job.id;
  }

  /** A send that got no job: what policy says of it, applied. 'again' sends the same key again now. */
  private async refusal(
    attempt: AttemptRow,
    body: ImageSubmission & VideoSubmission,
    error: unknown,
    send: SendState,
  ): Promise<string | undefined | 'again'> {
    const { ctx, lane } = this;
    // Still waiting for its turn when the run stopped: never sent; the committed attempt is resent by a later run.
    if (error instanceof NotSentError) return undefined;
    const e = errorOf(error);
    if (error instanceof TransportError || error instanceof ResponseShapeError) send.mayBeAccepted = true;
    // No answer at all: an outage is waited out with the slot held and resent at once with the same key, counting nothing against it.
    const noAnswer = await ctx.reachability.noAnswer(send.sentAt, error, lane.noNewWork);
    if (noAnswer === 'stopped') return undefined;
    const log = { item: attempt.item_id, attempt: attempt.n, code: e.code };
    if (noAnswer === 'outage') {
      ctx.settings.logger?.warn(log, 'no answer during an outage: resent with the same key once the service answers');
      return 'again';
    }
    const reaction = policy('submit', error);
    ctx.settings.logger?.warn({ ...log, reaction: reaction.do }, 'submission refused');
    switch (reaction.do) {
      case 'wait-and-resend':
        return this.waitForBucket(attempt, reaction, error);
      case 'resend-later':
      case 'resend-with-backoff':
      case 'query-later':
        return this.resendLater(attempt, reaction, e, error);
      case 'key-conflict':
        return this.keyConflict(attempt, e);
      case 'mark-item':
        return this.markItem(
          attempt,
          body,
          reaction.as,
          e,
          (error as { details?: { field?: unknown } }).details?.field,
        );
      case 'stop-run':
        // This answer says this request made no job; an earlier send of the same attempt may have.
        if (!send.mayBeAccepted) ctx.store.life.recordRefused(attempt.item_id, attempt.n, e, 'pending', this.now());
        ctx.report.refused(lane, e, reaction);
        if (send.mayBeAccepted)
          return this.holdMaybeAccepted(attempt, reaction.scope === 'key' ? keyRefusedNote(lane, attempt) : e);
        return undefined;
      default:
        // Never answers to a submission; if one ever did, the safe reading is "maybe accepted".
        return this.holdMaybeAccepted(attempt, e);
    }
  }

  /** A 429: a wait for the key's window or day holds the slot (the bucket's queue is the wait); one for a job's slot is a deferral. */
  private waitForBucket(
    attempt: AttemptRow,
    reaction: Extract<Reaction, { do: 'wait-and-resend' }>,
    error: unknown,
  ): 'again' | undefined {
    const { lane } = this;
    const submit = lane.limits.submit;
    const wait = waitMs(reaction, 0, error, this.ctx.clock.scaled) ?? submit.windowMs / submit.count;
    if (reaction.bucket === 'rate') lane.buckets.submit.pauseFor(wait);
    else if (reaction.bucket === 'daily-cap') lane.cap.pauseFor(wait);
    else return this.deferResend(attempt, wait);
    return 'again';
  }

  /** The same key again later, within the reaction's budget of resends; then the item fails (503) or is held "maybe accepted". */
  private resendLater(
    attempt: AttemptRow,
    reaction: Extract<Reaction, { do: 'resend-later' | 'resend-with-backoff' | 'query-later' }>,
    e: ErrorNote,
    error: unknown,
  ): undefined {
    const { clock, store } = this.ctx;
    // A 503's one resend is counted apart from the resends after no answer, which must not use it up.
    const unavailable = reaction.do === 'resend-later';
    const resends = unavailable ? attempt.unavailable_resends : attempt.resends;
    if (resends < reaction.maxResends) {
      const wait = waitMs(reaction, resends, error, clock.scaled)!;
      return this.deferResend(attempt, wait, unavailable ? 'unavailable' : 'no-answer');
    }
    if (!unavailable) return this.holdMaybeAccepted(attempt, e);
    if (store.life.recordRefused(attempt.item_id, attempt.n, e, 'failed', this.now()))
      this.final('failed', e.code, e.message);
    return undefined;
  }

  private keyConflict(attempt: AttemptRow, e: ErrorNote): undefined {
    const message = `${e.message} A job may already exist under this attempt's key (sent earlier with another body), so genbatch does not pay again on its own. Look for it in the service's job list; to submit the item anew anyway (a new key, charged again): genbatch retry <manifest> --id ${attempt.item_id}`;
    if (this.ctx.store.life.recordConflict(attempt.item_id, attempt.n, { code: e.code, message }, this.now()))
      this.final('failed', e.code, message);
    return undefined;
  }

  /** The item cannot succeed as sent; an upload that expired before use is made again, once, in a new attempt. */
  private async markItem(
    attempt: AttemptRow,
    body: ImageSubmission & VideoSubmission,
    as: 'rejected' | 'blocked' | 'failed',
    e: ErrorNote,
    field: unknown,
  ): Promise<string | undefined> {
    const { ctx } = this;
    const { store } = ctx;
    if (as === 'rejected' && !this.reuploaded && this.forgetUploads(body, field)) {
      // Material that expired before use: upload it again, in a new attempt (the 400 charged nothing).
      this.reuploaded = true;
      ctx.control.emit({ kind: 'retrying', itemId: attempt.item_id, attempt: attempt.n + 1, reason: 'expired upload' });
      store.life.recordRefused(attempt.item_id, attempt.n, e, 'pending', this.now());
      const next = await this.newAttempt();
      return next ? this.submit(next) : undefined;
    }
    if (store.life.recordRefused(attempt.item_id, attempt.n, e, as, this.now())) this.final(as, e.code, e.message);
    if (as === 'blocked') {
      ctx.report.blocked(this.lane);
      ctx.control.wake();
    }
    return undefined;
  }

  /**
   * The submission may have created a job and no answer said which: the item
   * stays `submitting`, its attempt committed, and the next run resends the
   * same key and body. `retry` never replaces such an attempt.
   */
  private holdMaybeAccepted(attempt: AttemptRow, e: { code: string; message: string }): undefined {
    const message = `${e.message} (the submission may have been accepted; run the same command again to resend it with the same key: it is never paid twice)`;
    if (this.ctx.store.life.recordMaybeAccepted(this.itemId, attempt.n, { code: e.code, message }, this.now()))
      this.final('maybe_accepted', e.code, message);
    return undefined;
  }

  /** The same key goes again after `delayMs`, sent by whichever task the feeder gives it to then: no slot is held meanwhile. */
  private deferResend(
    attempt: AttemptRow,
    delayMs: number,
    after: 'no-answer' | 'unavailable' = 'no-answer',
  ): undefined {
    const now = this.now();
    this.ctx.store.life.deferResend(this.itemId, attempt.n, now + delayMs, now, after);
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
    const { clock, firstPoll } = ctx;
    const signal = ctx.control.abort.signal;
    let failures = 0;
    const acceptedAt = this.acceptedAt;
    this.acceptedAt = undefined;
    if (acceptedAt !== undefined) {
      const waitMs = firstPoll.firstAt(this.fixed.model, acceptedAt) - clock.now();
      // An interrupt ends the wait; the loop below then returns.
      if (waitMs > 0) await ctx.report.timed(sleep(waitMs, signal).catch(() => {}));
    }
    for (;;) {
      if (signal.aborted) return undefined;
      let sentAt = clock.now();
      try {
        if (!(await ctx.reachability.ready(signal))) return undefined;
        const job = await this.lane.buckets.read.run(() => {
          sentAt = clock.now();
          return client.getJob(jobId, ctx.pollWait.seconds, signal);
        }, signal);
        failures = 0;
        if (job.status === 'COMPLETED' && acceptedAt !== undefined)
          firstPoll.ended(this.fixed.model, acceptedAt, clock.now());
        if (isTerminalStatus(job.status)) return job;
      } catch (error) {
        if (signal.aborted) return undefined;
        // Nothing answered anything: asked again once the service is back, and the failure is not the job's.
        const noAnswer = await ctx.reachability.noAnswer(sentAt, error, signal);
        if (noAnswer === 'stopped') return undefined;
        if (noAnswer === 'outage') continue;
        const reaction = policy('read-job', error);
        const e = errorOf(error);
        ctx.settings.logger?.warn(
          { item: this.itemId, job: jobId, code: e.code, reaction: reaction.do },
          'poll failed',
        );
        if (reaction.do === 'stop-run') {
          ctx.report.refused(this.lane, e, reaction);
          return this.keepJob(jobId, e);
        }
        if (reaction.do === 'adapt-wait') {
          if (!ctx.pollWait.lower(reaction.maxSeconds)) return this.keepJob(jobId, e);
          continue;
        }
        const read = this.lane.limits.read;
        const wait = waitMs(reaction, failures, error, clock.scaled) ?? read.windowMs / read.count;
        if (reaction.do === 'wait-and-resend') {
          this.lane.buckets.read.pauseFor(wait);
          continue;
        }
        const budget =
          reaction.do === 'keep-job' ? reaction.maxReads : 'maxResends' in reaction ? reaction.maxResends : 0;
        if (failures >= budget) return this.keepJob(jobId, e);
        failures++;
        await ctx.report.timed(sleep(wait));
      }
    }
  }

  private keepJob(jobId: string, e: { code: string; message: string }): undefined {
    const message = `the job ${jobId} (paid for) cannot be read now: ${e.message}. Run the same command again to ask for it again; it is not submitted again.`;
    if (this.ctx.store.life.keepJob(this.itemId, { code: e.code, message }, this.now()))
      this.final('running', e.code, message);
    return undefined;
  }

  /** A job ended: download, or a new attempt after FAILED/EXPIRED while retries remain. */
  private async ended(attempt: AttemptRow, job: Job): Promise<AttemptRow | undefined> {
    const { ctx } = this;
    const { store, clock } = ctx;
    const now = clock.now();
    ctx.control.emit({
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
        ctx.report.completed(attempt.item_id, job.id, job);
      return undefined;
    }
    const status = job.status === 'EXPIRED' ? 'expired' : 'failed';
    const code = job.error?.code ?? job.status;
    const error = { code, ...(job.error?.message ? { message: job.error.message } : {}) };
    store.life.recordEnded(
      attempt.item_id,
      attempt.n,
      { jobId: job.id, status, refunded: job.refunded, refundDay: clock.dayOf(attempt.accepted_at ?? now), error },
      now,
    );
    if (job.refunded > 0) ctx.report.refunded(this.credits.tags, job.refunded);
    if (store.attempts.failedCount(attempt.item_id) > ctx.settings.maxRetries)
      return this.finish('failed', code, job.error?.message ?? `the job ended ${job.status}`);
    ctx.control.emit({ kind: 'retrying', itemId: attempt.item_id, attempt: attempt.n + 1, reason: code });
    this.requeue();
    if (ctx.control.isStopping()) return undefined;
    return this.newAttempt();
  }
}
