import { Waiters } from '../../util/waiters.js';
/**
 * Whether submissions may leave: closed while the run is paused (another
 * shell's `genbatch pause`). Polls and downloads never wait for it.
 */
export class PauseSwitch {
  private pausedSince: number | undefined;
  private readonly waiters = new Waiters<boolean>();

  get since(): number | undefined {
    return this.pausedSince;
  }

  get isPaused(): boolean {
    return this.pausedSince !== undefined;
  }

  pause(since: number): void {
    this.pausedSince = since;
  }

  resume(): void {
    this.pausedSince = undefined;
    this.waiters.release(true);
  }

  /** At once while not paused; while paused, when resumed (true) or when `signal` aborts first (false). */
  wait(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.pausedSince === undefined) return Promise.resolve(true);
    return this.waiters.wait(signal, false);
  }
}
