/** What paces one kind of request of one key: this process's own window (RateWindow), or one shared through the coordinator. */
export interface Pacer {
  /**
   * Runs `fn` when the window allows; rejects with NotSentError, without calling `fn`, if `signal` aborts or the
   * pacer stops first. `fn` calls `unused()` when it ends having sent nothing (it found it may not leave): its place
   * in the window is given back at once, as the service never counted it.
   */
  run<T>(fn: (unused: () => void) => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** How many requests wait for their turn (never sent yet). */
  readonly waiting: number;
  /** When a request queued now would leave, as far as this process can tell; absent where it cannot (a window shared with other processes). */
  leavesAt?(now: number): number;
  /** Holds every queued request for `ms` (a 429's Retry-After), with a little jitter. */
  pauseFor(ms: number): void;
  /** What the service's `X-RateLimit-Remaining` said: it only ever slows the pacer. */
  serviceRemaining(remaining: number): void;
  /** Rejects every queued request (never sent) and accepts no more. */
  stop(): void;
}
