import { setMaxListeners } from 'node:events';
import type { Logger } from '../../log/logger.js';
import { EventBus } from '../../util/event-bus.js';
import type { RunEvent } from './events.js';
import { STOPS, decideStop, type Stop, type StopKind } from './stops.js';

export type { RunEvent } from './events.js';
export type { Stop, StopKind } from './stops.js';

/** How an item's download gave up. */
export interface DownloadFailure {
  code: string;
  message: string;
  /** The output dir cannot take files (ENOSPC, EACCES, …). */
  disk: boolean;
  /** Says something of this item alone (its name, its size), not of the disk or the storage. */
  itemOnly: boolean;
}

/** The shortest real time a wait for an event lasts before looking again anyway (see waitForEvent). */
const WAKE_FLOOR_MS = 250;

/** The run's control: its events, its stop (asked by its stages, decided by STOPS), and the wake-up its loops wait on. */
export class Control {
  /** Every event of the run, to any number of listeners. */
  readonly events: EventBus<RunEvent>;
  /** Aborts everything that waits (polls, downloads, queued requests): a stop whose rule aborts waits (an interrupt, a refused key, the service unreachable). */
  readonly abort = new AbortController();
  /** Aborted when the run takes no new work (any stop but the budget's, which lets reserved submissions go): queued submissions and uploads are cancelled, never sent. */
  readonly noNewWork = new AbortController();
  private stopped: Stop | undefined;
  private wakeUp: () => void = () => {};
  private woken = new Promise<void>((r) => (this.wakeUp = r));

  constructor(
    logger: Logger | undefined,
    /** Requests that may listen for the interrupt at once: one per slot and download, plus the queues'. */
    listeners: number,
  ) {
    // A listener's bug is logged; it never breaks the run that emitted.
    this.events = new EventBus((error, event) =>
      logger?.error({ err: error, event: event.kind }, 'an event listener failed'),
    );
    setMaxListeners(listeners, this.abort.signal);
    setMaxListeners(listeners, this.noNewWork.signal);
  }

  get stopReason(): Stop | undefined {
    return this.stopped;
  }

  isStopping(): boolean {
    return this.stopped !== undefined;
  }

  /**
   * A stage's word on why the run should stop. The run decides (decideStop:
   * the first reason stands, an interrupt ends it whatever came before), and
   * the reason's rule (STOPS) says what stops: new work, and for some the
   * waits too.
   */
  askStop(kind: StopKind, message: string): void {
    const stop = decideStop(this.stopped, { kind, message });
    if (!stop) return;
    this.stopped = stop;
    this.emit({ kind: 'stopping', reason: message });
    const rule = STOPS[kind];
    if (rule.newWork === 'cancel' && !this.noNewWork.signal.aborted) this.noNewWork.abort(new Error(message));
    if (rule.waits === 'abort' && !this.abort.signal.aborted) this.abort.abort(new Error(message));
    this.wake();
  }

  emit(event: RunEvent): void {
    this.events.emit(event);
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
