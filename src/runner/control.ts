import { setMaxListeners } from 'node:events';
import type { Logger } from '../log/logger.js';
import { sleep } from '../util/clock.js';
import type { RunEvent, StopKind } from './context.js';

/** The run's control: its events, the stop (and the interrupt it aborts), and the wake-up its loops wait on. */
export class Control {
  readonly abort = new AbortController();
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
  }

  get stopReason(): { kind: StopKind; message: string } | undefined {
    return this.stopped;
  }

  isStopping(): boolean {
    return this.stopped !== undefined;
  }

  /** Stops taking new work; an interrupt, a refused key or a full disk also abort what waits (polls, downloads, queued requests). */
  stop(kind: StopKind, message: string): void {
    if (this.stopped) return;
    this.stopped = { kind, message };
    this.emit({ kind: 'stopping', reason: message });
    if (kind === 'interrupted' || kind === 'refused' || kind === 'disk') this.abort.abort(new Error(message));
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

  /** Until something changes (wake) or `ms` have passed. */
  async waitForWake(ms: number): Promise<void> {
    await Promise.race([this.woken, sleep(Math.max(1, ms))]);
  }
}
