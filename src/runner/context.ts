import type { ManifestTop } from '../manifest/index.js';
import type { Logger } from '../log/logger.js';
import type { KeyLimits } from '../scheduler/limits.js';
import type { ItemRow, Store } from '../store/index.js';
import type { ItemSpec } from './bodies.js';
import type { FirstPoll } from './first-poll.js';
import type { SendBatch } from './send-batch.js';
import type { KeyLane } from './lanes.js';

export interface RunOptions {
  outDir: string;
  /** A rehearsal on the simulator: its output dir is never a real run's. */
  rehearsal?: boolean;
  /** The limits the flags give (each key's own may be lower: see its lane). */
  limits: KeyLimits;
  /** Long-poll seconds per GET of a job (the spec allows up to 30). */
  pollWaitSeconds: number;
  /** New attempts after a job ends FAILED or EXPIRED. */
  maxRetries: number;
  /** Run only the items whose id is one of these or matches one of these globs (and what they wait for); a later plain run does the rest. */
  only?: readonly string[];
  /** Run this many items first and go on only if they pass. */
  canary?: { size: import('./canary.js').CanarySize; maxFailures: number };
  /** Budget for the run, net of refunds. */
  maxCredits?: number;
  /** Stop before this many blocked submissions in the trailing 7 days (the service's threshold is 30). */
  maxBlocked: number;
  redoChanged: boolean;
  /** How long nothing may be sent, answered or said before the watchdog looks (default: 2 minutes of the service's time, 2 s at the least). */
  quietMs?: number;
  /** With nothing answering for this long (real milliseconds), the run stops (exit 4); 30 minutes by default. */
  unreachableMs?: number;
  /** Divides the key day, the 7-day window and back-off delays: for rehearsals on a time-scaled simulator. */
  timeScale: number;
  downloadConcurrency: number;
  /** Outputs larger than this are refused (an endless body would fill the disk). */
  maxOutputBytes?: number;
  /** Opens an output's temporary file (injectable: tests make the disk full). */
  openOutput?: (path: string) => Promise<import('../download/download.js').OutputFile>;
  /** How long a step of a first sync may hold the event loop (5 ms; tests make every step a few rows). */
  syncStepMs?: number;
  now: () => number;
  logger?: Logger;
  onEvent?: (event: RunEvent) => void;
}

export type RunEvent =
  | { kind: 'submitted'; itemId: string; attempt: number; jobId: string; credits: number }
  | { kind: 'job-ended'; itemId: string; jobId: string; status: string; code?: string }
  | { kind: 'item-final'; itemId: string; state: string; code?: string; message?: string }
  | { kind: 'retrying'; itemId: string; attempt: number; reason: string }
  | { kind: 'waiting'; reason: string; untilMs: number }
  | { kind: 'stopping'; reason: string }
  | { kind: 'notice'; message: string }
  /** Another shell paused the run (`genbatch pause`): no new submissions since then; or resumed it. */
  | { kind: 'paused'; since: number }
  | { kind: 'resumed' }
  /** Nothing was sent, answered or said for `quietMs` though work is open, and no known wait explains it: a bug, said with what each state waits for. */
  | { kind: 'stall'; quietMs: number; waiting: import('../report/waiting.js').Waiting[] };

/** How an item's download gave up. */
export interface DownloadFailure {
  code: string;
  message: string;
  /** The output dir cannot take files (ENOSPC, EACCES, …). */
  disk: boolean;
  /** Says something of this item alone (its name, its size), not of the disk or the storage. */
  itemOnly: boolean;
}

export type StopKind =
  | 'interrupted'
  | 'budget'
  | 'moderation'
  | 'refused'
  | 'disk'
  | 'canary'
  | 'unreachable'
  | 'drained'
  | 'nothing-selected';

/** What the tasks of a run share. */
export interface RunContext {
  store: Store;
  /** Reads presigned output links: they carry no key, so any key's client will do. */
  readonly storage: import('../api/index.js').ApiClient;
  manifest: ManifestTop;
  opts: RunOptions;
  /** When this run began: an attempt sent before it may have been accepted then. */
  readonly runStartedAt: number;
  /** Aborts polls and downloads (interrupt): submissions already sent still record their job. */
  abort: AbortController;
  /** Aborted when the run takes no new work: what waits to be submitted or uploaded is cancelled, never sent. */
  noNewWork: AbortSignal;
  /** Whether the service answers at all: requests wait for it while it does not, and a request that got no answer asks it what that was. */
  readonly reachability: import('./reachability.js').Reachability;
  /** Open unless another shell paused the run: every submission passes it before it leaves. */
  readonly pauseGate: import('./pause-gate.js').PauseGate;
  /** A download succeeded (undefined) or gave up: a full or unwritable disk, or the same failure again and again, stops the run. */
  downloadEnded(failure: DownloadFailure | undefined): void;
  spec(item: ItemRow): ItemSpec;
  /** The best bound known for one job of the item: the catalog's or manifest's price, else the largest charge seen for its model. */
  price(item: ItemRow): number | undefined;
  /** The service charged this for a job of `model`: a bound for the next unpriced ones. */
  noteCharge(model: string, credits: number): void;
  isStopping(): boolean;
  stop(kind: StopKind, message: string): void;
  emit(event: RunEvent): void;
  wake(): void;
  /** Waits until a submission of `credits` fits its key's daily cap and the budget; gives a release for after the answer, or undefined when the run stops. */
  dailyCapGate(
    lane: KeyLane,
    item: ItemRow,
    credits: number | undefined,
    mayHandOver: boolean,
  ): Promise<import('./gates.js').Release | 'hand-over' | undefined>;
  /** A submission of the key was blocked: every process on the key counts it (with a coordinator). */
  noteBlocked(lane: KeyLane): void;
  /** The service refused the key (401, a 403 code): it leaves the run; the run stops when none is left. */
  keyRefused(lane: KeyLane, error: { code: string; message: string }, hint: string): void;
  /** The item's submission was answered with a job. */
  jobAccepted(itemId: string): void;
  startDownload(itemId: string, jobId: string, fresh?: import('../api/index.js').Job): void;
  scaled(ms: number): number;
  /** A wait that has its time (a first poll's, a backoff's): the watchdog counts it as a reason for quiet. */
  timed<T>(wait: Promise<T>): Promise<T>;
  /** Failed uploads per item in this run: each failure defers the item, the fifth ends it. */
  readonly uploadFailures: Map<string, number>;
  dayOf(at: number): number;
  /** The long poll's wait, lowered for the whole run when the service refuses it. */
  readonly pollWait: PollWait;
  /** Where a submission's record is committed before it leaves, with the others of its turn. */
  readonly sends: SendBatch;
  /** When a new job's first poll leaves: learnt from the model's shortest job so far. */
  readonly firstPoll: FirstPoll;
}

/** The `wait` of a long poll, which the service may cap lower than asked (a 400 on the field `wait`). */
export class PollWait {
  constructor(public seconds: number) {}

  /** Lowers the wait to `max` when the service named it, else halves it; false when it cannot go lower. */
  lower(max: number | undefined): boolean {
    const next = max !== undefined && max < this.seconds ? Math.floor(max) : Math.floor(this.seconds / 2);
    if (next >= this.seconds) return false;
    this.seconds = Math.max(0, next);
    return true;
  }
}
