import type { Reaction } from '../api/index.js';
import type { ErrorNote } from '../store/index.js';
import type { KeyLane } from './keys/lanes.js';
import type { DownloadFailure } from './core/control.js';
import type { DownloadDeps } from './item/download-task.js';
import { FirstPoll } from './item/first-poll.js';
import type { JobTaskDeps } from './item/job-task.js';
import type { RunContext } from './shared.js';
import { PollWait } from './item/poll-wait.js';
import { SendBatch } from './item/send-batch.js';

/** What the shared parts cannot do alone: the run's own acts, passed to the tasks' deps. */
export interface RunActs {
  /** The item's submission was answered with a job. */
  accepted(itemId: string): void;
  /** A wait that has its time: the watchdog counts it as a reason for quiet. */
  timed<T>(wait: Promise<T>): Promise<T>;
  /** A download succeeded (undefined) or gave up. */
  downloadEnded(failure: DownloadFailure | undefined): void;
}

/** A job task's deps: the run's context, the poll's settings, and where each report goes. */
export function jobTaskDeps(run: RunContext, acts: RunActs): JobTaskDeps {
  const { options, store, clock, control, reachability, pauseGate, credits, lanes, session } = run;
  const pollWait = new PollWait(options.pollWaitSeconds);
  return {
    store,
    clock,
    control,
    reachability,
    pauseGate,
    sends: new SendBatch(store),
    pollWait,
    firstPoll: new FirstPoll(() => clock.scaled(pollWait.seconds * 1000)),
    session,
    settings: {
      outputs: run.outputs,
      maxRetries: options.maxRetries,
      idleTimeoutMs: options.idleTimeoutMs,
      logger: run.logger,
    },
    report: {
      charged: (model, charged) => credits.noteCharge(model, charged),
      refunded: (tags, refunded) => credits.refunded(tags, refunded),
      accepted: acts.accepted,
      refused: (lane, error, reaction) => refused(run, lane, error, reaction),
      blocked: (lane) => void lane.coordinator?.noteBlock(lane.fingerprint).catch(() => {}),
      otherKeyHasRoom: (lane, type, need) =>
        lanes.serving(type).some((l) => l !== lane && !l.cap.isWaiting(clock.now(), need)),
      timed: acts.timed,
    },
  };
}

/** A download's deps: the run's context, where outputs go and how they are named. */
export function downloadTaskDeps(run: RunContext, acts: RunActs): DownloadDeps {
  const { manifest, options, store, clock, control, reachability, lanes } = run;
  return {
    store,
    clock,
    control,
    reachability,
    // Output links carry no key: any key's client reads them.
    storage: lanes.all[0]!.client,
    naming: { outputName: manifest.outputName, vars: manifest.vars },
    settings: {
      outputs: run.outputs,
      maxOutputBytes: options.maxOutputBytes,
      idleTimeoutMs: options.idleTimeoutMs,
      logger: run.logger,
    },
    report: {
      refused: (lane, error, reaction) => refused(run, lane, error, reaction),
      ended: acts.downloadEnded,
    },
  };
}

/** The one answer to a refused key or account: the key leaves the run (the others go on), or the run stops. */
function refused(
  parts: RunContext,
  lane: KeyLane,
  error: ErrorNote,
  reaction: Extract<Reaction, { do: 'stop-run' }>,
): void {
  if (reaction.scope === 'account') parts.control.stop('refused', `${error.code}: ${error.message}\n${reaction.hint}`);
  else parts.roster.refused(lane, error, reaction.hint);
}
