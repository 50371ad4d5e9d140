import { policy, waitMs, type ImageSubmission, type Reaction, type VideoSubmission } from '../../api/index.js';
import type { ItemSpec } from '../../manifest/index.js';
import { NotSentError } from '../../scheduler/rate-window.js';
import type { AttemptRow } from '../../store/index.js';
import { idempotencyKey } from '../core/identity.js';
import { buildBody } from './bodies.js';
import { errorOf, type ItemTask } from './job-deps.js';
import { InputError } from './uploads.js';

/**
 * An item's next attempt: its inputs uploaded, then the attempt and its key
 * committed (only then may the request leave). Undefined when there is none
 * now: the item went back to pending (a stop, an outage's end, a backoff of
 * its uploads), or it ended.
 */
export async function newAttempt(task: ItemTask): Promise<AttemptRow | undefined> {
  const { store, clock } = task.deps;
  const item = task.item();
  // Which version of each earlier item's output the body takes: one made again since makes this attempt's "changed".
  const used = new Map<string, number>();
  const body = await uploadedBody(task, used);
  if (!body) return undefined;
  const n = item.attempt + 1;
  const key = idempotencyKey(store.meta('run_id')!, item.id, item.content_hash, n);
  const inputs = used.size ? JSON.stringify(Object.fromEntries(used)) : null;
  if (!store.lifecycle.startAttempt(item.id, n, key, JSON.stringify(body), clock.now(), task.lane.fingerprint, inputs))
    return undefined;
  return store.attempts.latest(item.id);
}

/** The submission body with its inputs uploaded, retried through an outage and the upload window's 429s. */
async function uploadedBody(
  task: ItemTask,
  used: Map<string, number>,
): Promise<ImageSubmission | VideoSubmission | undefined> {
  const { deps, lane } = task;
  const { store, clock, settings } = deps;
  const spec = JSON.parse(task.item().spec) as ItemSpec;
  for (;;) {
    const startedAt = clock.now();
    try {
      if (!(await deps.reachability.ready(lane.noNewWork))) return task.requeue();
      return await buildBody(
        spec,
        {
          client: lane.client,
          keyFp: lane.fingerprint,
          store,
          window: lane.windows.upload,
          now: clock.now,
          validityMarginMs: clock.scaled(10 * 60_000),
          inFlight: lane.uploadsInFlight,
          outputs: settings.outputs,
          signal: lane.noNewWork,
          idleTimeoutMs: settings.idleTimeoutMs,
        },
        used,
      );
    } catch (error) {
      if (error instanceof NotSentError) return task.requeue();
      if (error instanceof InputError) return task.endWithoutOutput('failed', 'INPUT_ERROR', error.message);
      const noAnswer = await deps.reachability.noAnswer(startedAt, error, lane.noNewWork);
      if (noAnswer === 'stopped') return task.requeue();
      if (noAnswer === 'outage') continue;
      const reaction = policy('upload', error);
      if (reaction.do === 'stop-run') {
        // Nothing of the item was sent: it stays pending, for another key or a later run.
        deps.report.refused(lane, errorOf(error), reaction);
        return undefined;
      }
      if (reaction.do !== 'wait-and-resend') return uploadFailed(task, reaction, error);
      const upload = lane.limits.upload;
      lane.windows.upload.pauseFor(waitMs(reaction, 0, error, clock.scaled, upload));
      if (deps.control.isStopping()) return task.requeue();
    }
  }
}

/** An upload failed: the item waits (pending, no slot held) for its backoff; the last failure the policy allows ends it. */
function uploadFailed(task: ItemTask, reaction: Reaction, error: unknown): undefined {
  const { clock, store } = task.deps;
  // Counted in the state: a resumed run goes on from the same count.
  const failures = task.item().upload_failures;
  if (reaction.do !== 'resend-with-backoff' || failures >= reaction.maxResends)
    return task.endWithoutOutput('failed', 'UPLOAD_FAILED', (error as Error).message);
  const now = clock.now();
  store.lifecycle.uploadFailed(
    task.itemId,
    now,
    now + waitMs(reaction, failures, error, clock.scaled, task.lane.limits.upload),
  );
  return undefined;
}

/**
 * After a 400 on an upload-key field, forgets the body's uploads so the next
 * attempt uploads them again (material that expired before use); true when
 * the refused field was an upload key.
 */
export function forgetUploads(task: ItemTask, body: ImageSubmission & VideoSubmission, field: unknown): boolean {
  if (typeof field !== 'string' || !/^(inputs\[\d+\]\.key|imageKey|referenceImageKeys(\[\d+\])?|videoKey)$/.test(field))
    return false;
  const keys = [
    ...(body.inputs ?? []).map((i) => i.key),
    body.imageKey,
    ...(body.referenceImageKeys ?? []),
    body.videoKey,
  ].filter((k): k is string => Boolean(k));
  for (const key of keys) task.deps.store.uploads.forget(key);
  return keys.length > 0;
}
