import type { ImageSubmission, Job, VideoSubmission } from '../../api/index.js';
import type { AttemptRow } from '../../store/index.js';
import { sleep } from '../../util/sleep.js';
import { newAttempt } from './attempt.js';
import type { ItemTask } from './job-deps.js';
import { refusal, type SendState } from './refusals.js';

/** A submission's product: the job the service answered with, and when (its first poll waits from then). */
export interface Accepted {
  readonly jobId: string;
  readonly acceptedAt: number;
}

/**
 * An attempt's submission: its stored body sent with its key until the
 * service answers with a job; resends only ever reuse that key. Every send
 * passes the checks (the service answers, the run is not paused, its credits
 * are reserved, its item's gates approved) and is committed as sent before it
 * leaves.
 */
export class Submission {
  private reuploaded = false;

  constructor(private readonly task: ItemTask) {}

  /** The job once the service answered with one; undefined when the item left this task (ended, deferred, held, stopped). */
  async submit(sent: AttemptRow): Promise<Accepted | undefined> {
    const { task } = this;
    let attempt = sent;
    const body = JSON.parse(attempt.body) as ImageSubmission & VideoSubmission;
    // Sent before this run, or resent in it after an answer that left its fate open: a job may exist under its key.
    const send: SendState = {
      mayBeAccepted: attempt.sent_at !== null && (attempt.sent_at < task.deps.session.startedAt || attempt.resends > 0),
      sent: attempt.sent_at !== null,
      sentAt: 0,
    };
    for (;;) {
      // A resend deferred after an answer that left its fate open waits here, its slot held (a job may be running).
      if (!(await this.untilDue())) return undefined;
      if (!(await this.mayLeave(send.sent))) return undefined;
      let job: Job | undefined | 'again';
      try {
        job = await this.sendOnce(attempt, body, send);
      } catch (error) {
        task.credits.release();
        const next = await refusal(task, attempt, body, error, send, !this.reuploaded);
        if (next === 'again') {
          // Its counts of resends moved: the next refusal reads them as they are now.
          attempt = task.deps.store.attempts.latest(task.itemId) ?? attempt;
          continue;
        }
        if (next === 'reupload') return this.reupload();
        return next;
      }
      if (job === 'again' || !job) {
        task.credits.release();
        if (job === 'again') continue;
        return undefined;
      }
      return this.accepted(attempt, job);
    }
  }

  /** Until the item's time to be resent (now, unless a resend was deferred); false when the run takes no new work first. */
  private async untilDue(): Promise<boolean> {
    const { deps, lane } = this.task;
    const wait = this.task.item().not_before - deps.clock.now();
    if (wait > 0) await deps.report.timed(sleep(wait, lane.noNewWork).catch(() => {}));
    return !lane.noNewWork.aborted;
  }

  /** Material that expired before use: uploaded again, in a new attempt (the 400 charged nothing), once. */
  private async reupload(): Promise<Accepted | undefined> {
    this.reuploaded = true;
    const next = await newAttempt(this.task);
    return next ? this.submit(next) : undefined;
  }

  /**
   * Waits until the submission may leave: the service answers, the run is not
   * paused, and its credits are reserved. False when it does not leave now
   * (the run stops, or the item goes back for another key).
   */
  private async mayLeave(sent: boolean): Promise<boolean> {
    const { deps, lane, fixed, credits } = this.task;
    // The attempt stays committed: a resumed run resends the same key. (A budget stop lets the credit check decide: what it let through within the budget goes.)
    if (lane.noNewWork.aborted) return false;
    // While nothing answers, the submission waits with its slot (it may be a job in flight already) for the service's return.
    if (!(await deps.reachability.ready(lane.noNewWork))) return false;
    // Paused from another shell: nothing is sent, resends included (a paused run spends nothing new).
    if (!(await deps.pauseSwitch.wait(lane.noNewWork))) return false;
    // An attempt never sent may go to another key that has room rather than wait for this one's cap.
    const reserved = await credits.reserve(
      sent ? undefined : (price) => deps.report.otherKeyHasRoom(lane, fixed.type, price),
    );
    if (reserved === 'hand-over') {
      // Never sent, and this key waits for its cap while another has room: the item goes back for that one.
      deps.store.lifecycle.requeue(this.task.itemId, this.task.now());
      return false;
    }
    return reserved === 'reserved';
  }

  /** One send through the key's submit window: the job, undefined (not sent: the run stops), or 'again' (asked again whether it may leave). */
  private async sendOnce(attempt: AttemptRow, body: ImageSubmission & VideoSubmission, send: SendState) {
    const { deps, lane, fixed } = this.task;
    const { clock } = deps;
    const checkedDay = clock.dayOf(clock.now());
    // It waited (for the window, or for its record's commit) past the key day it was let through for: through the credit check again, for the new day.
    const dayTurned = () => clock.dayOf(clock.now()) !== checkedDay || lane.cap.dayEnding(clock.now());
    return lane.windows.submit.run(async (unused): Promise<Job | undefined | 'again'> => {
      // Each way out before the request leaves gives its place in the window back: the service never counted it (a
      // queued item a decision took back costs no other item its turn).
      const notSent = <T>(why: T): T => {
        unused();
        return why;
      };
      if (lane.noNewWork.aborted) return notSent(undefined); // queued when the run stopped: not sent (a budget stop lets reserved ones go)
      if (dayTurned()) return notSent('again');
      // Paused while it waited for its turn: not sent; it waits for resume.
      if (deps.pauseSwitch.isPaused) return notSent('again');
      // Committed (with the others leaving in this turn) before it leaves; once committed it leaves, interrupt or not, as if on the wire.
      const record = { id: attempt.item_id, n: attempt.n, now: clock.now(), keyFp: lane.fingerprint };
      if (!(await deps.sends.record(record))) return notSent(undefined);
      const resend = send.sent;
      send.sent = true;
      // The commit was a turn of the event loop later: the day is asked again right before the request leaves (recorded, it is resent with its key).
      if (dayTurned()) return notSent('again');
      send.sentAt = clock.now();
      deps.control.emit({
        kind: 'submitted',
        itemId: attempt.item_id,
        attempt: attempt.n,
        keyFp: lane.fingerprint,
        resend,
      });
      return fixed.type === 'image'
        ? lane.client.submitImage(body, attempt.idempotency_key)
        : lane.client.submitVideo(body, attempt.idempotency_key);
    }, lane.noNewWork);
  }

  /** The service answered with a job: its charge is recorded, its credits settled. */
  private accepted(attempt: AttemptRow, job: Job): Accepted {
    const { deps, fixed, credits } = this.task;
    const charged = job.charged ?? credits.price ?? 0;
    if (job.charged !== undefined) deps.report.charged(fixed.model, job.charged);
    const now = this.task.now();
    deps.store.lifecycle.recordAccepted(attempt.item_id, attempt.n, job.id, charged, deps.clock.dayOf(now), now);
    deps.report.accepted(attempt.item_id);
    deps.control.emit({
      kind: 'accepted',
      itemId: attempt.item_id,
      attempt: attempt.n,
      jobId: job.id,
      credits: charged,
    });
    credits.settle(charged);
    return { jobId: job.id, acceptedAt: now };
  }
}
