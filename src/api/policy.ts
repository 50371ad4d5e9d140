import { ApiError, ResponseShapeError, StorageError, TransportError } from './errors.js';
import { backoffMs } from '../util/backoff.js';

/** The longest a resend or a read waits in its backoff, in the service's time. */
const LONGEST_BACKOFF_MS = 60_000;

/**
 * What the runner does about an error or a job's end: the spec's error table,
 * made executable. Call sites ask `policy(operation, error)` and apply the
 * answer; none re-derives policy. A reaction that waits carries its delay
 * (in the service's time: `waitMs` scales it, in one place) and its budget
 * of resends.
 */
export type Reaction =
  /**
   * 429: pause the named limit for Retry-After (else `delayMs`; the rate
   * window's own spacing when none), then resend with the same idempotency key.
   */
  | { do: 'wait-and-resend'; limit: 'rate' | 'concurrency' | 'daily-cap'; delayMs?: number }
  /** 503: nothing charged; resend with the same key after `delayMs` (or Retry-After), at most `maxResends` times. */
  | { do: 'resend-later'; maxResends: number; delayMs: number }
  /**
   * No answer, an unreadable answer, or an unexpected 5xx. On a submission the
   * request may have been accepted (charged): resend only with the same key,
   * and when the resends run out leave the attempt "maybe accepted" for the
   * next run, never a new attempt. On a read: ask again.
   */
  | { do: 'resend-with-backoff'; maxResends: number; baseMs: number }
  /** IDEMPOTENCY_IN_FLIGHT: the first request is still being handled; ask again after `delayMs` with the same key, `maxResends` times. */
  | { do: 'query-later'; maxResends: number; delayMs: number }
  /** The job ended FAILED/EXPIRED (refunded): a new attempt with a new key. */
  | { do: 'new-attempt' }
  /**
   * A 409 other than IN_FLIGHT: a job may exist under this key (sent earlier
   * with another body). The item stops there with what to do; it is never
   * paid for again on its own.
   */
  | { do: 'key-conflict' }
  /** The item cannot succeed as written: never resend it unchanged. */
  | { do: 'mark-item'; as: 'rejected' | 'blocked' | 'failed' }
  /** A read refused for its `wait`: ask again with a shorter one (`maxSeconds` when the service said). */
  | { do: 'adapt-wait'; maxSeconds: number | undefined }
  /**
   * One paid job cannot be read now: ask again with backoff, and after
   * `maxReads` refusals leave it for the next run to ask again; never end it
   * on a read error.
   */
  | { do: 'keep-job'; maxReads: number; baseMs: number }
  /** A list refused for a parameter of ours (its page size): ask again with the service's default. */
  | { do: 'service-default' }
  /**
   * Nothing this run can do will help: stop submitting and tell the user what
   * to do. `key`: the service refused this API key (401, a 403 code), which
   * leaves the run while other keys go on; `account`: no key can go on (402).
   */
  | { do: 'stop-run'; hint: string; scope: 'key' | 'account' };

/** What the runner was doing when the error came. */
export type Operation = 'submit' | 'read-job' | 'upload' | 'account' | 'list-jobs';

const KEY_HINTS: Readonly<Record<string, string>> = {
  UNAUTHENTICATED:
    'The API key was rejected (invalid, revoked or expired). Create a key in the account settings and set GENBATCH_API_KEY.',
  CREDITS_EXHAUSTED: 'The account has too few credits. Top up, then run the same command again to resume.',
  SCOPE_DENIED:
    'The key lacks a scope this manifest needs (image or video). Create a key with that scope and set GENBATCH_API_KEY.',
  API_NOT_ELIGIBLE:
    'The account does not meet the API eligibility conditions (verified e-mail, 7 days old, 2,500 purchased credits, fewer than 30 blocked submissions in 7 days).',
  API_DISABLED: 'The API is not open. Retrying will not help; try again when the service opens it.',
  ACCOUNT_SUSPENDED: 'The account is deactivated. Contact support.',
};

export const ERROR_TABLE: Readonly<Record<string, Reaction>> = {
  VALIDATION_ERROR: { do: 'mark-item', as: 'rejected' },
  // The balance is the account's, shared by its keys; every other refusal is of the key that was sent.
  ...Object.fromEntries(
    Object.entries(KEY_HINTS).map(([code, hint]) => [
      code,
      { do: 'stop-run', hint, scope: code === 'CREDITS_EXHAUSTED' ? 'account' : 'key' } as const,
    ]),
  ),
  IDEMPOTENCY_IN_FLIGHT: { do: 'query-later', maxResends: 30, delayMs: 1_000 },
  CONTENT_VIOLATION: { do: 'mark-item', as: 'blocked' },
  RATE_LIMITED: { do: 'wait-and-resend', limit: 'rate' },
  // A job's slot frees when a job ends: the submission is deferred, its slot given to others meanwhile.
  CONCURRENCY_LIMIT: { do: 'wait-and-resend', limit: 'concurrency', delayMs: 5_000 },
  // The service's cap is lower than ours: an hour, unless it says when its day resets.
  DAILY_CAP_REACHED: { do: 'wait-and-resend', limit: 'daily-cap', delayMs: 3_600_000 },
  MODERATION_UNAVAILABLE: { do: 'resend-later', maxResends: 1, delayMs: 10_000 },
  UPSTREAM_UNAVAILABLE: { do: 'resend-later', maxResends: 1, delayMs: 10_000 },
};

/** Job end states that stop polling, and what follows each. */
export const JOB_END_TABLE: Readonly<Record<'COMPLETED' | 'FAILED' | 'EXPIRED', 'download' | Reaction>> = {
  COMPLETED: 'download',
  FAILED: { do: 'new-attempt' },
  EXPIRED: { do: 'new-attempt' },
};

export function isTerminalStatus(status: string): status is keyof typeof JOB_END_TABLE {
  return status in JOB_END_TABLE;
}

/** No answer to a submission: resent with its key this many times, then held "maybe accepted" for the next run. */
const NETWORK_RESENDS = 8;
/** Network errors and 5xx on a read of a job: asked again this many times before the job is left for the next run. */
const READ_RETRIES = 12;
/** Refusals of one job's read (403, 404, …): asked again this many times before the job is left for the next run. */
const KEEP_JOB_AFTER = 2;
/** Failed uploads of an item's inputs: the item waits after each, and this many end it. */
const UPLOAD_FAILURES = 5;

const resendWithBackoff = (maxResends: number, baseMs = 500): Reaction => ({
  do: 'resend-with-backoff',
  maxResends,
  baseMs,
});

/** The error table, read the same way for every operation; `policy` refines it per operation. */
export function reactionTo(error: unknown): Reaction {
  if (error instanceof TransportError) return resendWithBackoff(NETWORK_RESENDS);
  if (error instanceof ApiError) {
    const known = ERROR_TABLE[error.code];
    if (known) return known;
    // Codes the spec leaves unshown are classified by their family, then by status.
    if (error.code.startsWith('IDEMPOTENCY_')) return { do: 'key-conflict' };
    if (error.status === 429) return ERROR_TABLE.RATE_LIMITED!;
    if (error.status === 401 || error.status === 402 || error.status === 403) {
      return {
        do: 'stop-run',
        hint: `The service refused the key (HTTP ${error.status} ${error.code}). Check the key and the account.`,
        scope: error.status === 402 ? 'account' : 'key',
      };
    }
    if (error.status >= 500) return resendWithBackoff(NETWORK_RESENDS);
    return { do: 'mark-item', as: 'failed' };
  }
  if (error instanceof ResponseShapeError || error instanceof StorageError) return { do: 'mark-item', as: 'failed' };
  throw error;
}

/** What to do about `error` met while doing `operation`. */
export function policy(operation: Operation, error: unknown): Reaction {
  if (operation === 'submit') {
    // A 2xx whose body cannot be read may be a created, charged job: only the same key may follow.
    if (error instanceof ResponseShapeError) return resendWithBackoff(NETWORK_RESENDS);
    return reactionTo(error);
  }
  if (operation === 'read-job') return readJobPolicy(error);
  if (operation === 'upload') {
    // Nothing of an upload is paid: whatever else fails is tried again later, a few times.
    const reaction = reactionTo(error);
    const final = reaction.do === 'stop-run' || reaction.do === 'wait-and-resend' || reaction.do === 'mark-item';
    return final ? reaction : resendWithBackoff(UPLOAD_FAILURES, 1_000);
  }
  if (operation === 'list-jobs') {
    // A service whose page size bounds differ from ours: its own default then.
    if (error instanceof ApiError && error.status === 400) return { do: 'service-default' };
    return reactionTo(error);
  }
  return reactionTo(error);
}

function readJobPolicy(error: unknown): Reaction {
  if (error instanceof ApiError) {
    if (error.status === 400 && error.details.field === 'wait')
      return { do: 'adapt-wait', maxSeconds: maxOf(error.details) };
    if (error.status === 429) return reactionTo(error);
    // Only 401 and the spec's key and account codes concern the key; any other refusal concerns this one job.
    if (error.status === 401 || KEY_HINTS[error.code]) return reactionTo(error);
    if (error.status >= 500) return resendWithBackoff(READ_RETRIES);
    return { do: 'keep-job', maxReads: KEEP_JOB_AFTER, baseMs: 500 };
  }
  const reaction = reactionTo(error);
  // A read changes nothing: whatever else failed is asked again, a dozen times, before the job waits for the next run.
  return reaction.do === 'stop-run' || reaction.do === 'wait-and-resend' ? reaction : resendWithBackoff(READ_RETRIES);
}

/**
 * How long to wait before acting on `reaction` for the `n`th time (0-based),
 * in real time: a backoff's delay, else Retry-After as the service said it,
 * else the reaction's own delay; each delay of ours is in the service's time
 * and `scaled` makes it real (a rehearsal's time runs faster). A rate limit
 * without Retry-After waits the limit's own spacing (`rate`, real: one
 * request's share of its window). The one place a wait is derived.
 */
export function waitMs(
  reaction: Reaction,
  n: number,
  error: unknown,
  scaled: (ms: number) => number,
  rate: { count: number; windowMs: number },
): number {
  if (reaction.do === 'resend-with-backoff' || reaction.do === 'keep-job')
    return scaled(backoffMs(n, { firstMs: reaction.baseMs, longestMs: LONGEST_BACKOFF_MS }));
  const retryAfter = (error as { retryAfterMs?: unknown } | null | undefined)?.retryAfterMs;
  if (typeof retryAfter === 'number') return retryAfter;
  if ('delayMs' in reaction && reaction.delayMs !== undefined) return scaled(reaction.delayMs);
  return rate.windowMs / rate.count;
}

/** The largest value a refused field allows, where the service says (`details.max`, `maximum` or `allowed`). */
function maxOf(details: Record<string, unknown>): number | undefined {
  for (const name of ['max', 'maximum', 'allowedMax']) {
    const value = details[name];
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
  }
  return undefined;
}
