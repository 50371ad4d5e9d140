import { isTerminalStatus, policy, waitMs, type Job } from '../../api/index.js';
import { sleep } from '../../util/sleep.js';
import { errorOf, type ItemTask } from './job-deps.js';

/**
 * Long-polls a job through the read window, one poll in flight per job, until
 * it ends. A paid job is never given up on a read error: when it cannot be
 * read now, the item stays `running` for the next run to ask again. A job
 * this task submitted (`acceptedAt`) is first polled once a job of its model
 * would be near its end.
 */
export async function pollJob(task: ItemTask, jobId: string, acceptedAt: number | undefined): Promise<Job | undefined> {
  const { deps, lane, fixed } = task;
  const { clock, firstPoll } = deps;
  const signal = deps.control.abort.signal;
  let failures = 0;
  if (acceptedAt !== undefined) {
    const firstIn = firstPoll.firstAt(fixed.model, acceptedAt) - clock.now();
    // An interrupt ends the wait; the loop below then returns.
    if (firstIn > 0) await deps.report.timed(sleep(firstIn, signal).catch(() => {}));
  }
  for (;;) {
    if (signal.aborted) return undefined;
    let sentAt = clock.now();
    try {
      if (!(await deps.reachability.ready(signal))) return undefined;
      const job = await lane.windows.read.run(() => {
        sentAt = clock.now();
        return lane.client.getJob(jobId, deps.pollWait.seconds, signal);
      }, signal);
      failures = 0;
      deps.control.emit({ kind: 'polled', itemId: task.itemId, jobId, status: job.status });
      if (job.status === 'COMPLETED' && acceptedAt !== undefined) firstPoll.ended(fixed.model, acceptedAt, clock.now());
      if (isTerminalStatus(job.status)) return job;
    } catch (error) {
      if (signal.aborted) return undefined;
      const next = await pollFailed(task, jobId, error, sentAt, failures);
      if (next === 'give-up') return undefined;
      if (next === 'counted') failures++;
    }
  }
}

/** A poll that got no job: asked again (now, or after a wait that counts as a failure), or the job is kept for a later run. */
async function pollFailed(
  task: ItemTask,
  jobId: string,
  error: unknown,
  sentAt: number,
  failures: number,
): Promise<'again' | 'counted' | 'give-up'> {
  const { deps, lane } = task;
  const { clock } = deps;
  // Nothing answered anything: asked again once the service is back, and the failure is not the job's.
  const noAnswer = await deps.reachability.noAnswer(sentAt, error, deps.control.abort.signal);
  if (noAnswer === 'stopped') return 'give-up';
  if (noAnswer === 'outage') return 'again';
  const reaction = policy('read-job', error);
  const e = errorOf(error);
  deps.settings.logger?.warn({ item: task.itemId, job: jobId, code: e.code, reaction: reaction.do }, 'poll failed');
  if (reaction.do === 'stop-run') {
    deps.report.refused(lane, e, reaction);
    return keepJob(task, jobId, e);
  }
  if (reaction.do === 'adapt-wait') return deps.pollWait.lower(reaction.maxSeconds) ? 'again' : keepJob(task, jobId, e);
  const read = lane.limits.read;
  const wait = waitMs(reaction, failures, error, clock.scaled, read);
  if (reaction.do === 'wait-and-resend') {
    lane.windows.read.pauseFor(wait);
    return 'again';
  }
  const budget = reaction.do === 'keep-job' ? reaction.maxReads : 'maxResends' in reaction ? reaction.maxResends : 0;
  if (failures >= budget) return keepJob(task, jobId, e);
  await deps.report.timed(sleep(wait));
  return 'counted';
}

/** The job cannot be read now: the item stays `running` (paid for) for the next run to ask again. */
function keepJob(task: ItemTask, jobId: string, e: { code: string; message: string }): 'give-up' {
  const message = `the job ${jobId} (paid for) cannot be read now: ${e.message}. Run the same command again to ask for it again; it is not submitted again.`;
  if (task.deps.store.lifecycle.keepJob(task.itemId, { code: e.code, message }, task.now()))
    task.final('running', e.code, message);
  return 'give-up';
}
