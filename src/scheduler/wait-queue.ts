import { GenbatchError } from '../util/errors.js';
/** A request still waiting for its turn when the run stops or is interrupted: it was never sent. */
export class NotSentError extends GenbatchError {
  override readonly name = 'NotSentError';
}

const notSent = () => new NotSentError('not sent: the run is stopping');

interface Waiter<P> {
  go: (permit: P) => void;
  fail: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/**
 * Requests waiting for their turn, first in, first out, each sent when a
 * pacer hands it a permit (its place in a window). One whose signal aborts
 * first leaves the queue and is never sent.
 */
export class WaitQueue<P> {
  private readonly waiters: Waiter<P>[] = [];

  get length(): number {
    return this.waiters.length;
  }

  /** `fn` runs once `send` hands it a permit; `answered(permit)` once it settles, either way. */
  enqueue<T>(fn: () => Promise<T>, signal: AbortSignal | undefined, answered: (permit: P) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) return reject(notSent());
      const waiter: Waiter<P> = {
        go: (permit) =>
          void fn().then(
            (value) => {
              answered(permit);
              resolve(value);
            },
            (error: unknown) => {
              answered(permit);
              reject(error);
            },
          ),
        fail: reject,
        signal,
        onAbort: () => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(notSent());
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Sends the first request waiting with `permit`; false when none waits. */
  send(permit: P): boolean {
    const waiter = this.waiters.shift();
    if (!waiter) return false;
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    waiter.go(permit);
    return true;
  }

  /** Every waiting request is rejected, never sent. */
  failAll(): void {
    for (const waiter of this.waiters.splice(0)) {
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.fail(notSent());
    }
  }
}
