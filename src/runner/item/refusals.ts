import {
  ResponseShapeError,
  TransportError,
  policy,
  waitMs,
  type ImageSubmission,
  type Reaction,
  type VideoSubmission,
} from '../../api/index.js';
import { NotSentError } from '../../scheduler/rate-window.js';
import type { AttemptRow, ErrorNote } from '../../store/index.js';
import { holdMaybeAccepted, keyRefusedNote } from '../keys/lanes.js';
import { forgetUploads } from './attempt.js';
import { errorOf, type ItemTask } from './job-deps.js';

/** What a submission's sends so far say of it. */
export interface SendState {
  /** A job may exist under its key (an earlier send got no answer that says otherwise). */
  mayBeAccepted: boolean;
  /** Recorded as sent at least once: it may no longer go to another key. */
  sent: boolean;
  /** When its latest send left. */
  sentAt: number;
}

/**
 * A send that got no job: what policy says of it, applied. 'again' sends the
 * same key again now; 'reupload' makes a new attempt with its inputs uploaded
 * again (material that expired before use, allowed once: `mayReupload`);
 * undefined when the item leaves the task.
 */
export async function refusal(
  task: ItemTask,
  attempt: AttemptRow,
  body: ImageSubmission & VideoSubmission,
  error: unknown,
  send: SendState,
  mayReupload: boolean,
): Promise<undefined | 'again' | 'reupload'> {
  const { deps, lane } = task;
  // Still waiting for its turn when the run stopped: never sent; the committed attempt is resent by a later run.
  if (error instanceof NotSentError) return undefined;
  const e = errorOf(error);
  if (error instanceof TransportError || error instanceof ResponseShapeError) send.mayBeAccepted = true;
  // No answer at all: an outage is waited out with the slot held and resent at once with the same key, counting nothing against it.
  const noAnswer = await deps.reachability.noAnswer(send.sentAt, error, lane.noNewWork);
  if (noAnswer === 'stopped') return undefined;
  const log = { item: attempt.item_id, attempt: attempt.n, code: e.code };
  if (noAnswer === 'outage') {
    deps.settings.logger?.warn(log, 'no answer during an outage: resent with the same key once the service answers');
    return 'again';
  }
  const reaction = policy('submit', error);
  deps.settings.logger?.warn({ ...log, reaction: reaction.do }, 'submission refused');
  switch (reaction.do) {
    case 'wait-and-resend':
      return waitForLimit(task, attempt, reaction, error);
    case 'resend-later':
    case 'resend-with-backoff':
    case 'query-later':
      return resendLater(task, attempt, reaction, e, error);
    case 'key-conflict':
      return keyConflict(task, attempt, e);
    case 'mark-item': {
      const field = (error as { details?: { field?: unknown } }).details?.field;
      // Only a refused upload key may be uploaded again; its uploads are forgotten for the new attempt.
      const reupload = reaction.as === 'rejected' && mayReupload && forgetUploads(task, body, field);
      return markItem(task, attempt, reaction.as, e, reupload);
    }
    case 'stop-run':
      // This answer says this request made no job; an earlier send of the same attempt may have.
      if (!send.mayBeAccepted) deps.store.lifecycle.recordRefused(attempt.item_id, attempt.n, e, 'pending', task.now());
      deps.report.refused(lane, e, reaction);
      if (send.mayBeAccepted)
        return maybeAccepted(task, attempt, reaction.scope === 'key' ? keyRefusedNote(lane, attempt) : e);
      return undefined;
    default:
      // Never answers to a submission; if one ever did, the safe reading is "maybe accepted".
      return maybeAccepted(task, attempt, e);
  }
}

/** A 429: a wait for the key's window or day holds the slot (the window's queue is the wait); one for a job's slot is a deferral. */
function waitForLimit(
  task: ItemTask,
  attempt: AttemptRow,
  reaction: Extract<Reaction, { do: 'wait-and-resend' }>,
  error: unknown,
): 'again' | undefined {
  const { lane } = task;
  const submit = lane.limits.submit;
  const wait = waitMs(reaction, 0, error, task.deps.clock.scaled, submit);
  if (reaction.limit === 'rate') lane.windows.submit.pauseFor(wait);
  else if (reaction.limit === 'daily-cap') lane.cap.pauseFor(wait);
  else return deferResend(task, attempt, wait);
  return 'again';
}

/**
 * The same key again later, within the reaction's budget of resends; then
 * the item fails (503) or is held "maybe accepted". A 503 said no job was
 * made: the slot is freed meanwhile. Any other answer left the job's fate
 * open: it may be running on the service, so the task keeps its slot and
 * waits for the resend's time itself ('again').
 */
function resendLater(
  task: ItemTask,
  attempt: AttemptRow,
  reaction: Extract<Reaction, { do: 'resend-later' | 'resend-with-backoff' | 'query-later' }>,
  e: ErrorNote,
  error: unknown,
): undefined | 'again' {
  const { clock, store } = task.deps;
  // A 503's one resend is counted apart from the resends after no answer, which must not use it up.
  const unavailable = reaction.do === 'resend-later';
  const resends = unavailable ? attempt.unavailable_resends : attempt.resends;
  if (resends < reaction.maxResends) {
    const wait = waitMs(reaction, resends, error, clock.scaled, task.lane.limits.submit);
    if (unavailable) return deferResend(task, attempt, wait, 'unavailable');
    // Recorded (the count, and the time a resumed run resends it at), then waited for here with the slot.
    const now = task.now();
    task.deps.store.lifecycle.deferResend(task.itemId, attempt.n, now + wait, now, 'no-answer');
    return 'again';
  }
  if (!unavailable) return maybeAccepted(task, attempt, e);
  if (store.lifecycle.recordRefused(attempt.item_id, attempt.n, e, 'failed', task.now()))
    task.final('failed', e.code, e.message);
  return undefined;
}

function keyConflict(task: ItemTask, attempt: AttemptRow, e: ErrorNote): undefined {
  const message = `${e.message} A job may already exist under this attempt's key (sent earlier with another body), so genbatch does not pay again on its own. Look for it in the service's job list; to submit the item anew anyway (a new key, charged again): genbatch retry <manifest> --id ${attempt.item_id}`;
  if (task.deps.store.lifecycle.recordConflict(attempt.item_id, attempt.n, { code: e.code, message }, task.now()))
    task.final('failed', e.code, message);
  return undefined;
}

/** The item cannot succeed as sent; an upload that expired before use (`reupload`) is made again, once, in a new attempt. */
function markItem(
  task: ItemTask,
  attempt: AttemptRow,
  as: 'rejected' | 'blocked' | 'failed',
  e: ErrorNote,
  reupload: boolean,
): undefined | 'reupload' {
  const { deps } = task;
  const { store } = deps;
  if (reupload) {
    deps.control.emit({ kind: 'retrying', itemId: attempt.item_id, attempt: attempt.n + 1, reason: 'expired upload' });
    store.lifecycle.recordRefused(attempt.item_id, attempt.n, e, 'pending', task.now());
    return 'reupload';
  }
  if (store.lifecycle.recordRefused(attempt.item_id, attempt.n, e, as, task.now())) task.final(as, e.code, e.message);
  if (as === 'blocked') {
    deps.report.blocked(task.lane);
    deps.control.wake();
  }
  return undefined;
}

/** The submission may have created a job and no answer said which: held for a later run, told how to go on. */
function maybeAccepted(task: ItemTask, attempt: AttemptRow, e: { code: string; message: string }): undefined {
  const message = `${e.message} (the submission may have been accepted; run the same command again to resend it with the same key: it is never paid twice)`;
  holdMaybeAccepted(
    task.deps,
    task.lane,
    { id: task.itemId, attempt: attempt.n, type: task.fixed.type },
    { code: e.code, message },
  );
  return undefined;
}

/** The same key goes again after `delayMs`, sent by whichever task the feeder gives it to then: no slot is held meanwhile. */
function deferResend(
  task: ItemTask,
  attempt: AttemptRow,
  delayMs: number,
  after: 'no-answer' | 'unavailable' = 'no-answer',
): undefined {
  const now = task.now();
  task.deps.store.lifecycle.deferResend(task.itemId, attempt.n, now + delayMs, now, after);
  return undefined;
}
