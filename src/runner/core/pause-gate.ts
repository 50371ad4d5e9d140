/**
 * Whether submissions may leave: closed while the run is paused (another
 * shell's `genbatch pause`). Polls and downloads never wait for it.
 */
export class PauseGate {
  private pausedSince: number | undefined;
  private readonly waiters = new Set<() => void>();

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
    for (const open of [...this.waiters]) open();
  }

  /** At once while not paused; while paused, when resumed (true) or when `signal` aborts first (false). */
  wait(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.pausedSince === undefined) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = (open: boolean) => {
        this.waiters.delete(onOpen);
        signal.removeEventListener('abort', onAbort);
        resolve(open);
      };
      const onOpen = () => done(true);
      const onAbort = () => done(false);
      this.waiters.add(onOpen);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
