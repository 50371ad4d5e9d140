import { sleep } from '../util/sleep.js';
import { TransportError } from './errors.js';
import { FIRST_CONTACT_MS, NotTheServiceError } from './first-contact.js';

export interface UntilAnsweredOptions {
  /** Give up (rethrow the last failure) once nothing has answered for this long. */
  unreachableMs: number;
  /**
   * Counted from the call, not from its first failure, and at most this long:
   * a service that has not answered once since the start is a configuration
   * fault (a wrong URL), not an outage to wait out.
   */
  firstContactMs?: number;
  /** Between tries. */
  everyMs: number;
  /** Said once, at the first failure, with how long the wait may last. */
  onWait?: (reason: string, upToMs: number) => void;
  now?: () => number;
  /** Ends the wait: the last failure is thrown. */
  signal?: AbortSignal;
}

/** A failure that says nothing answered (or not yet the service itself): asked again. */
function noAnswerYet(error: unknown): boolean {
  return error instanceof TransportError || (error instanceof NotTheServiceError && error.transient);
}

/**
 * Runs `ask` until the service answers: a request that gets no answer at
 * all (refused, reset, no DNS, timed out) is asked again, until nothing has
 * answered for `unreachableMs`. Any answer, an error one too, is returned or
 * thrown as it is: a blip at start-up must not end an overnight run.
 */
export async function untilAnswered<T>(ask: () => Promise<T>, options: UntilAnsweredOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const limit =
    options.firstContactMs === undefined
      ? options.unreachableMs
      : Math.min(options.firstContactMs, options.unreachableMs);
  let since: number | undefined = options.firstContactMs === undefined ? undefined : now();
  let said = false;
  for (;;) {
    try {
      return await ask();
    } catch (error) {
      if (!noAnswerYet(error)) throw error;
      since ??= now();
      if (!said) {
        said = true;
        options.onWait?.(
          error instanceof NotTheServiceError ? `${error.baseUrl}: ${error.what}` : (error as Error).message,
          limit,
        );
      }
      if (now() - since >= limit || options.signal?.aborted) throw error;
      await sleep(options.everyMs, options.signal).catch(() => {});
    }
  }
}

/** A command's first question to the service: asked again while nothing has answered, for FIRST_CONTACT_MS at most. */
export function untilFirstAnswer<T>(ask: () => Promise<T>): Promise<T> {
  return untilAnswered(ask, { unreachableMs: FIRST_CONTACT_MS, firstContactMs: FIRST_CONTACT_MS, everyMs: 250 });
}
