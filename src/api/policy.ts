import { ApiError, ResponseShapeError, StorageError, TransportError } from './errors.js';

/**
 * What the runner does about an error or a job's end: the spec's error table,
 * made executable. The runner asks `reactionTo`; it never re-derives policy.
 */
export type Reaction =
  /** 429: pause the named bucket for Retry-After, then resend with the same idempotency key. */
  | { do: 'wait-and-resend'; bucket: 'rate' | 'concurrency' | 'daily-cap' }
  /** 503: nothing charged; resend with the same key after a pause, at most `maxResends` times. */
  | { do: 'resend-later'; maxResends: number }
  /** No answer, or an unexpected 5xx: the request may have been accepted; resend only with the same key. */
  | { do: 'resend-with-backoff'; maxResends: number }
  /** IDEMPOTENCY_IN_FLIGHT: the first request is still being handled; ask again later with the same key. */
  | { do: 'query-later' }
  /** The key was spent on another body, or the job ended FAILED/EXPIRED (refunded): a new attempt with a new key. */
  | { do: 'new-attempt' }
  /** The item cannot succeed as written: never resend it unchanged. */
  | { do: 'mark-item'; as: 'rejected' | 'blocked' | 'failed' }
  /** Nothing this run can do will help: stop submitting and tell the user what to do. */
  | { do: 'stop-run'; hint: string };

export const ERROR_TABLE: Readonly<Record<string, Reaction>> = {
  VALIDATION_ERROR: { do: 'mark-item', as: 'rejected' },
  UNAUTHENTICATED: { do: 'stop-run', hint: 'The API key was rejected (invalid, revoked or expired). Create a key in the account settings and set GENBATCH_API_KEY.' },
  CREDITS_EXHAUSTED: { do: 'stop-run', hint: 'The account has too few credits. Top up, then run the same command again to resume.' },
  SCOPE_DENIED: { do: 'stop-run', hint: 'The key lacks a scope this manifest needs (image or video). Create a key with that scope and set GENBATCH_API_KEY.' },
  API_NOT_ELIGIBLE: { do: 'stop-run', hint: 'The account does not meet the API eligibility conditions (verified e-mail, 7 days old, 2,500 purchased credits, fewer than 30 blocked submissions in 7 days).' },
  API_DISABLED: { do: 'stop-run', hint: 'The API is not open. Retrying will not help; try again when the service opens it.' },
  ACCOUNT_SUSPENDED: { do: 'stop-run', hint: 'The account is deactivated. Contact support.' },
  IDEMPOTENCY_IN_FLIGHT: { do: 'query-later' },
  CONTENT_VIOLATION: { do: 'mark-item', as: 'blocked' },
  RATE_LIMITED: { do: 'wait-and-resend', bucket: 'rate' },
  CONCURRENCY_LIMIT: { do: 'wait-and-resend', bucket: 'concurrency' },
  DAILY_CAP_REACHED: { do: 'wait-and-resend', bucket: 'daily-cap' },
  MODERATION_UNAVAILABLE: { do: 'resend-later', maxResends: 1 },
  UPSTREAM_UNAVAILABLE: { do: 'resend-later', maxResends: 1 },
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

const NETWORK_RESENDS = 8;

export function reactionTo(error: unknown): Reaction {
  if (error instanceof TransportError) return { do: 'resend-with-backoff', maxResends: NETWORK_RESENDS };
  if (error instanceof ApiError) {
    const known = ERROR_TABLE[error.code];
    if (known) return known;
    // Codes the spec leaves unshown are classified by their family, then by status.
    if (error.code.startsWith('IDEMPOTENCY_')) return { do: 'new-attempt' };
    if (error.status === 429) return { do: 'wait-and-resend', bucket: 'rate' };
    if (error.status === 401 || error.status === 402 || error.status === 403) {
      return { do: 'stop-run', hint: `The service refused the key (HTTP ${error.status} ${error.code}). Check the key and the account.` };
    }
    if (error.status >= 500) return { do: 'resend-with-backoff', maxResends: NETWORK_RESENDS };
    return { do: 'mark-item', as: 'failed' };
  }
  if (error instanceof ResponseShapeError || error instanceof StorageError) return { do: 'mark-item', as: 'failed' };
  throw error;
}
