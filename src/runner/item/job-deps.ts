import { ApiError, type Reaction } from '../../api/index.js';
import type { Logger } from '../../log/logger.js';
import type { OutputSink } from '../../sink/index.js';
import type { ErrorNote, ItemRow, Store } from '../../store/index.js';
import type { RunClock } from '../../scheduler/clock.js';
import type { Control } from '../core/control.js';
import type { PauseSwitch } from '../core/pause-switch.js';
import type { Reservation } from '../keys/credits.js';
import type { JobType, KeyLane } from '../keys/lanes.js';
import type { Reachability } from '../watch/reachability.js';
import type { FirstPoll } from './first-poll.js';
import type { PollWait } from './poll-wait.js';
import type { SendBatch } from './send-batch.js';

/** What a job task uses of the run: built once by the run, shared by every task. */
export interface JobTaskDeps {
  readonly store: Store;
  readonly clock: RunClock;
  /** Its events, wake-ups and stop; its abort ends polls (an interrupt). */
  readonly control: Control;
  /** Whether the service answers at all: requests wait for it, and a request that got no answer asks it what that was. */
  readonly reachability: Reachability;
  /** Open unless another shell paused the run: every submission passes it before it leaves. */
  readonly pauseSwitch: PauseSwitch;
  /** Where a submission's record is committed before it leaves, with the others of its turn. */
  readonly sends: SendBatch;
  /** The long poll's wait, lowered for the whole run when the service refuses it. */
  readonly pollWait: PollWait;
  /** When a new job's first poll leaves: learnt from the model's shortest job so far. */
  readonly firstPoll: FirstPoll;
  /** When this run began: an attempt sent before it may have been accepted then. */
  readonly session: { readonly startedAt: number };
  readonly settings: {
    /** Where outputs are: an earlier item's output is read from there as an input. */
    readonly outputs: OutputSink;
    readonly maxRetries: number;
    /** A transfer (an upload) that moves no byte for this long is abandoned. */
    readonly idleTimeoutMs?: number | undefined;
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
 * One item's task as each of its phases (the attempt, the submission, the
 * poll) sees it: the run's deps, the key's lane, the item as it was handed
 * out, its credits, and the acts every phase shares.
 */
export interface ItemTask {
  readonly deps: JobTaskDeps;
  readonly lane: KeyLane;
  /** The item as it was handed out: its type, model and spec are fixed for the task's life. */
  readonly fixed: ItemRow;
  /** The attempt's credits: its price, and its reservation against the budget and the key's cap. */
  readonly credits: Reservation;
  readonly itemId: string;
  now(): number;
  /** The item as the state holds it now (its state and attempt read afresh). */
  item(): ItemRow;
  /** The item's end, said as an event. */
  final(state: string, code?: string, message?: string): void;
  /** The item ends failed, rejected or blocked (if it may): said as its end. */
  endWithoutOutput(state: 'failed' | 'rejected' | 'blocked', code: string, message: string): undefined;
  /** Back to pending (after `notBefore`), no slot held. */
  requeue(notBefore?: number): undefined;
}

/** An error as an item records it: its code, and a message that does not say the code again. */
export function errorOf(error: unknown): { code: string; message: string } {
  if (error instanceof ApiError) return { code: error.code, message: error.reason };
  const code = (error as { code?: unknown }).code;
  return {
    code: typeof code === 'string' ? code : ((error as Error).name ?? 'ERROR'),
    message: (error as Error).message ?? String(error),
  };
}
