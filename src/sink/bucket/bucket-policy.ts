import type { SinkProblem } from '../sink.js';
import { BucketError } from './bucket-client.js';

/**
 * The bucket's faults, in one place: how an error is classed (`classify`),
 * what each part does about it (`bucketPolicy`), and how it is said to the
 * user (`bucketProblem`, `bucketProblemText`). The service's counterpart is
 * api/policy.ts: callers ask, apply the answer, and derive nothing.
 */

const DENIED = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccountProblem',
  'InvalidToken',
  'ExpiredToken',
  'CredentialsProviderError',
]);
/** A local file that cannot be read (gone, forbidden, a folder, too many open): no fault of the bucket's. */
const LOCAL = new Set(['ENOENT', 'EACCES', 'EISDIR', 'EMFILE']);
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'TimeoutError',
  'RequestTimeout',
]);

/**
 * Any error of a bucket call as genbatch acts on it: an SDK error by its
 * status and name, a socket's or a stream's own as no answer, a local
 * file's as the object's own failure. Its message never holds a credential
 * (the SDK's never do).
 */
export function classify(error: unknown, what: string): BucketError {
  if (error instanceof BucketError) return error;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const e = error as { name?: string; Code?: string; code?: string; message?: string };
  const name = e.Code ?? e.name ?? e.code ?? 'Error';
  const code = e.code;
  const said = `${what}: ${status ? `${status} ` : ''}${name}${e.message && e.message !== name ? ` (${e.message})` : ''}`;
  if (name === 'NoSuchBucket') return new BucketError(said, 'no-bucket', name, { cause: error });
  // No region, no credentials found: nothing reached the bucket, and waiting will not mend it.
  const unconfigured = status === undefined && /region is missing|credential/i.test(e.message ?? '');
  if (code && LOCAL.has(code)) return new BucketError(said, 'failed', code, { cause: error });
  if (DENIED.has(name) || status === 401 || status === 403 || unconfigured)
    return new BucketError(said, 'denied', unconfigured ? unconfiguredCode(e.message) : name, { cause: error });
  if (status === undefined || UNREACHABLE.has(name) || (code && UNREACHABLE.has(code)))
    return new BucketError(said, 'unreachable', code ?? name, { cause: error });
  if (status >= 500 || status === 429 || name === 'SlowDown' || name === 'ConditionalRequestConflict' || status === 409)
    return new BucketError(said, 'slow-down', name, { cause: error });
  return new BucketError(said, 'failed', name, { cause: error });
}

/** The code a missing setting goes by in messages ('Error' says nothing). */
function unconfiguredCode(message: string | undefined): string {
  return /region is missing/i.test(message ?? '') ? 'NO_REGION' : 'NO_CREDENTIALS';
}

/** The first backoff after a fault, and the longest: doubled each time in between, half of it jittered. */
export const FIRST_BACKOFF_MS = 200;
export const LONGEST_BACKOFF_MS = 15_000;
/**
 * The longest backoff while the bucket answers nothing at all (refused,
 * reset, silent): its return is seen within this, and the first answer wakes
 * every call that waits. A slow-down is the bucket's own word to send less:
 * its backoff keeps the longest above.
 */
export const LONGEST_NO_ANSWER_MS = 2_000;
/** Tries of one publication that fails for a reason of its own (not the bucket's health) before the run leaves it. */
const OWN_FAILURES = 3;

/** What one bucket call does about a fault (PatientBucket): ride it out, or throw it to its caller. */
export type CallReaction =
  /** Back off (at most `longestMs`) and send it again; `noAnswer`: the bucket's first answer to any call wakes it. */
  { do: 'back-off'; longestMs: number; noAnswer: boolean } | { do: 'throw' };

/** What the publisher does about a publication whose call failed (after riding out what passes). */
export type PublicationReaction =
  /** Its staged file is gone: an output's download brings it back, a copy is made again. */
  | { do: 'stage-again' }
  /** The bucket's own trouble past its patience, a denial, no bucket: nothing more is published this run (exit 4). */
  | { do: 'stop-run' }
  /** A fault of its own (a verification): tried again in this run. */
  | { do: 'try-again' }
  /** Kept locally with why, for the next run (a name another object holds, or its own tries ran out). */
  | { do: 'leave-to-next-run' };

/** What a look that checks a staged output's loss does about a fault: none is evidence of a loss. */
export type LookReaction = { do: 'not-lost' };

/**
 * What each part does about a bucket's fault: `call`, every request (the
 * fault already classed); `publish`, a publication that failed, its
 * `failures` so far in this run counted with this one; `look`, a check of
 * whether an unpublished output is lost.
 */
export function bucketPolicy(op: 'call', fault: BucketError): CallReaction;
export function bucketPolicy(op: 'publish', fault: BucketError, failures: number): PublicationReaction;
export function bucketPolicy(op: 'look', fault: BucketError): LookReaction;
export function bucketPolicy(
  op: 'call' | 'publish' | 'look',
  fault: BucketError,
  failures = 1,
): CallReaction | PublicationReaction | LookReaction {
  if (op === 'look') return { do: 'not-lost' };
  if (op === 'call') {
    if (fault.fault === 'unreachable') return { do: 'back-off', longestMs: LONGEST_NO_ANSWER_MS, noAnswer: true };
    if (fault.fault === 'slow-down') return { do: 'back-off', longestMs: LONGEST_BACKOFF_MS, noAnswer: false };
    return { do: 'throw' };
  }
  if (fault.code === 'NOT_STAGED') return { do: 'stage-again' };
  if (fault.fault !== 'failed') return { do: 'stop-run' };
  if (fault.code === 'NAME_TAKEN' || failures >= OWN_FAILURES) return { do: 'leave-to-next-run' };
  return { do: 'try-again' };
}

/** What to tell the user when the bucket cannot be written: by the bucket's answer. */
export function bucketProblem(location: string, error: unknown): SinkProblem {
  const e = error instanceof BucketError ? error : undefined;
  const code = e?.code ?? 'WRITE_FAILED';
  return { code, message: `cannot write to ${location} (${code}): ${whatToDo(e)}` };
}

/** A bucket's fault in a user's words: what it said, and what to do. */
export function bucketProblemText(error: BucketError): string {
  return `${error.message}: ${whatToDo(error)}`;
}

function whatToDo(e: BucketError | undefined): string {
  // Nothing reached the bucket: the setting that is missing is said first, alone.
  const missing = e?.fault === 'denied' ? unconfigured(e) : undefined;
  if (missing) return missing;
  return e?.fault === 'no-bucket'
    ? 'the bucket does not exist: create it, or give another --out s3://BUCKET/PREFIX'
    : e?.fault === 'denied'
      ? 'the credentials may not write there, or none were found: check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), AWS_REGION and the bucket policy'
      : e?.fault === 'unreachable' || e?.fault === 'slow-down'
        ? 'it answered nothing but faults for --unreachable-minutes: check AWS_ENDPOINT_URL (or the network) and the region'
        : 'check the endpoint, the region and the credentials';
}

/** What the SDK found missing before sending anything: no region, or no credentials. */
function unconfigured(e: BucketError): string | undefined {
  const said = `${e.message} ${(e.cause as Error | undefined)?.message ?? ''}`;
  if (/region is missing/i.test(said))
    return "no region is set: set AWS_REGION (auto for Cloudflare R2, the bucket's region for AWS S3) or a region in AWS_PROFILE's config";
  if (/could not load credentials|credential.*(missing|not found)|no credentials/i.test(said))
    return 'no credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)';
  return undefined;
}
