import type { Reaction } from '../api/index.js';
import type { Logger } from '../log/logger.js';
import type { ManifestTop } from '../manifest/index.js';
import type { ResolvedRunOptions } from '../options/resolve.js';
import type { RunClock } from '../scheduler/clock.js';
import type { OutputSink } from '../sink/index.js';
import type { ErrorNote, Store } from '../store/index.js';
import type { KeyLane, KeyLanes } from './keys/lanes.js';
import type { Control, DownloadFailure } from './core/control.js';
import type { DownloadDeps } from './item/download-task.js';
import { FirstPoll } from './item/first-poll.js';
import type { JobTaskDeps } from './item/job-task.js';
import { PollWait } from './item/poll-wait.js';
import { SendBatch } from './item/send-batch.js';
import type { Reachability } from './watch/reachability.js';
import type { PauseSwitch } from './core/pause-switch.js';
import type { Credits } from './keys/credits.js';

/** What both tasks are built from: the options they read, the state, and the parts every request goes through. */
export interface TaskBase {
  readonly options: Pick<ResolvedRunOptions, 'pollWaitSeconds' | 'maxRetries' | 'idleTimeoutMs' | 'maxOutputBytes'>;
  readonly store: Store;
  readonly clock: RunClock;
  readonly control: Control;
  readonly reachability: Reachability;
  readonly lanes: KeyLanes;
  readonly outputs: OutputSink;
  readonly logger?: Logger | undefined;
}

/** What the run's parts cannot do alone: the run's own acts, passed to the tasks' deps. */
export interface RunActs {
  /** The item's submission was answered with a job. */
  accepted(itemId: string): void;
  /** A wait that has its time: the watchdog counts it as a reason for quiet. */
  timed<T>(wait: Promise<T>): Promise<T>;
  /** A download succeeded (undefined) or gave up. */
  downloadEnded(failure: DownloadFailure | undefined): void;
  /** The service refused a key (it leaves the run) or the account (the run stops). */
  refused(lane: KeyLane, error: ErrorNote, reaction: Extract<Reaction, { do: 'stop-run' }>): void;
}

/** A job task's deps: the run's base, the poll's settings, and where each report goes. */
export function jobTaskDeps(
  run: TaskBase & {
    readonly pauseSwitch: PauseSwitch;
    readonly credits: Credits;
    readonly session: { readonly startedAt: number };
  },
  acts: RunActs,
): JobTaskDeps {
  const { options, store, clock, control, reachability, pauseSwitch, credits, lanes, session } = run;
  const pollWait = new PollWait(options.pollWaitSeconds);
  return {
    store,
    clock,
    control,
    reachability,
    pauseSwitch,
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
      refused: acts.refused,
      blocked: (lane) => void lane.coordinator?.noteBlock(lane.fingerprint).catch(() => {}),
      otherKeyHasRoom: (lane, type, need) =>
        lanes.serving(type).some((l) => l !== lane && !l.cap.isWaiting(clock.now(), need)),
      timed: acts.timed,
    },
  };
}

/** A download's deps: the run's base, where outputs go and how they are named. */
export function downloadTaskDeps(
  run: TaskBase & { readonly manifest: Pick<ManifestTop, 'outputName' | 'vars'> },
  acts: RunActs,
): DownloadDeps {
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
    report: { refused: acts.refused, ended: acts.downloadEnded },
  };
}
