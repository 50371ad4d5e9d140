import { sleep } from '../util/sleep.js';
import { TransportError } from './errors.js';

export interface UntilAnsweredOptions {
  /** Give up (rethrow the last failure) once nothing has answered for this long. */
  unreachableMs: number;
  /** Between tries. */
  everyMs: number;
  /** Said once, at the first failure. */
  onWait?: (reason: string) => void;
  now?: () => number;
  /** Ends the wait: the last failure is thrown. */
  signal?: AbortSignal;
}

/**
 * Runs `ask` until the service answers: a request that gets no answer at
 * all (refused, reset, no DNS, timed out) is asked again, until nothing has
 * answered for `unreachableMs`. Any answer, an error one too, is returned or
 * thrown as it is: a blip at start-up must not end an overnight run.
 */
export async function untilAnswered<T>(ask: () => Promise<T>, opts: UntilAnsweredOptions): Promise<T> {
  const now = opts.now ?? Date.now;
  let since: number | undefined;
  for (;;) {
    try {
      return await ask();
    } catch (error) {
      if (!(error instanceof TransportError)) throw error;
      if (since === undefined) {
        since = now();
        opts.onWait?.(error.message);
      }
      if (now() - since >= opts.unreachableMs || opts.signal?.aborted) throw error;
      await sleep(opts.everyMs, opts.signal).catch(() => {});
    }
  }
}
