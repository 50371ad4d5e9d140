import { setMaxListeners } from 'node:events';
import type { Logger } from '../../log/logger.js';
import type { Waiting } from '../../store/waiting.js';

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
  | { kind: 'stall'; quietMs: number; waiting: Waiting[] };

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

/** The shortest real time a wait for an event lasts before looking again anyway (see waitForEvent). */
const WAKE_FLOOR_MS = 250;

/** The run's control: its events, the stop (and the interrupt it aborts), and the wake-up its loops wait on. */
export class Control {
  /** Aborts everything that waits (polls, downloads, queued requests): an interrupt or a refused key. */
  readonly abort = new AbortController();
  /** Aborted when the run takes no new work (any stop but the budget's, which lets reserved submissions go): queued submissions and uploads are cancelled, never sent. */
  readonly noNewWork = new AbortController();
  private stopped: { kind: StopKind; message: string } | undefined;
  private wakeUp: () => void = () => {};
  private woken = new Promise<void>((r) => (this.wakeUp = r));

  constructor(
    private readonly logger: Logger | undefined,
    private readonly onEvent: ((event: RunEvent) => void) | undefined,
    /** Requests that may listen for the interrupt at once: one per slot and download, plus the queues'. */
    listeners: number,
  ) {
    setMaxListeners(listeners, this.abort.signal);
    setMaxListeners(listeners, this.noNewWork.signal);
  }

  get stopReason(): { kind: StopKind; message: string } | undefined {
    return this.stopped;
  }

  isStopping(): boolean {
    return this.stopped !== undefined;
  }

  /**
   * Stops taking new work. An interrupt or a refused key also aborts what
   * waits (polls, downloads); when outputs cannot be written, jobs in flight
   * are still polled and recorded.
   */
  stop(kind: StopKind, message: string): void {
    if (this.stopped) return;
    this.stopped = { kind, message };
    this.emit({ kind: 'stopping', reason: message });
    if (kind !== 'budget') this.noNewWork.abort(new Error(message));
    // Nothing answers a poll when the service is unreachable: paid jobs wait in the state for the next run.
    if (kind === 'interrupted' || kind === 'refused' || kind === 'unreachable') this.abort.abort(new Error(message));
    this.wake();
  }

  emit(event: RunEvent): void {
    this.logger?.info(event, event.kind);
    this.onEvent?.(event);
  }

  wake(): void {
    const wake = this.wakeUp;
    this.woken = new Promise<void>((r) => (this.wakeUp = r));
    wake();
  }

  /**
   * Until an event this wait is for wakes it, or until `dueInMs` (something
   * due by then). `scaledSecond` bounds it only in case a wake was missed, and
   * never under WAKE_FLOOR_MS of real time: a scaled second is under a
   * millisecond at 3600x, and waits that short turn into polling that costs
   * more CPU than the work.
   */
  waitForEvent(scaledSecond: number, dueInMs = Infinity): Promise<void> {
    return this.waitForWake(Math.min(dueInMs, Math.max(scaledSecond, WAKE_FLOOR_MS)));
  }

  /** Until something changes (wake) or `ms` have passed; the timer goes with the wait, so an ended run leaves none behind to hold the process. */
  async waitForWake(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.woken, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(1, ms))))]);
    clearTimeout(timer);
  }
}
