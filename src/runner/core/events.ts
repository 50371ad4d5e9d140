import type { ApiAnswer, LimitKind } from '../../api/index.js';
import type { Logger } from '../../log/logger.js';
import type { Waiting } from '../../store/waiting.js';

/**
 * What a run says as it goes, to any number of listeners (the live line, the
 * log, notifications, the watchdog, a library's caller, metrics). Each event
 * names its item where it has one.
 */
export type RunEvent = ItemEvent | ServiceEvent | RunStateEvent;

/** One item's life: its submission, its job, its outputs. */
export type ItemEvent =
  /** A submission left, its record committed first (`resend`: the same key again). */
  | { kind: 'submitted'; itemId: string; attempt: number; keyFp: string; resend: boolean }
  /** The service answered a submission with a job, charged `credits`. */
  | { kind: 'accepted'; itemId: string; attempt: number; jobId: string; credits: number }
  /** A poll of the item's job was answered. */
  | { kind: 'polled'; itemId: string; jobId: string; status: string }
  | { kind: 'job-ended'; itemId: string; jobId: string; status: string; code?: string }
  /** One output saved and verified (`ms`: from opening its link to its rename into place). */
  | { kind: 'downloaded'; itemId: string; jobId: string; output: number; path: string; bytes: number; ms: number }
  /** A transfer moved no byte for a while inside its body (since `since`): it gives its place to the next, and is abandoned at the idle timeout. */
  | { kind: 'transfer-stalled'; itemId: string; transfer: 'download' | 'upload'; since: number }
  /** A stalled transfer's silence is over (`stalledMs` since its last byte): it moved again, or ended (abandoned or failed). */
  | {
      kind: 'transfer-stall-ended';
      itemId: string;
      transfer: 'download' | 'upload';
      since: number;
      stalledMs: number;
      how: 'moved' | 'ended';
    }
  /** One try at an output failed; `retry`: a fresh link is tried next, else the item waits for a later run. */
  | { kind: 'download-failed'; itemId: string; jobId: string; output: number; code: string; retry: boolean }
  /** A web copy of an output made and written beside it (`path`), marked as AI-made unless the manifest says not. */
  | { kind: 'copy-made'; itemId: string; jobId: string; output: number; path: string; bytes: number; ms: number }
  /** A web copy could not be made (the original is untouched; the next run tries again). */
  | { kind: 'copy-failed'; itemId: string; jobId: string; output: number; path: string; message: string }
  /** The manifest's checks rejected the item's version (a flat image, a wrong size): `reason` says which. */
  | { kind: 'rejected-by-check'; itemId: string; version: number; reason: string }
  /** One output (or its web copy `copy`) verified in the bucket (`url`) and recorded; its local file dropped unless kept. */
  | {
      kind: 'published';
      itemId: string;
      jobId: string;
      output: number;
      copy?: string;
      url: string;
      bytes: number;
      ms: number;
    }
  /** One try at publishing an output (or its copy `copy`) failed (`retry`: tried again in this run, else by a later one). */
  | {
      kind: 'publish-failed';
      itemId: string;
      jobId: string;
      output: number;
      copy?: string;
      code: string;
      retry: boolean;
    }
  /** The item reached a state this run leaves it in (done, failed, blocked, held, …). */
  | { kind: 'item-final'; itemId: string; state: string; code?: string; message?: string }
  | { kind: 'retrying'; itemId: string; attempt: number; reason: string };

/** The service and the keys: every answer, every 429, outages. */
export type ServiceEvent =
  /** The service answered a request of the key (any HTTP status). */
  | (Omit<ApiAnswer, 'remaining' | 'retryAfterMs'> & { keyFp: string })
  /** A 429: the key's `limit` is reached (`code` says which: RATE_LIMITED, CONCURRENCY_LIMIT, DAILY_CAP_REACHED). */
  | { kind: 'rate-limited'; keyFp: string; limit: LimitKind; code: string; retryAfterMs?: number }
  /** The service answers nothing since `since` (down), or answers again (up). */
  | { kind: 'outage'; phase: 'down' | 'up'; since: number; reason?: string }
  /**
   * The bucket answers nothing but faults since `since` (down: its calls are sent again until `givesUpAt`, the last
   * fault `code`), or answers again (up).
   */
  | { kind: 'bucket-outage'; phase: 'down' | 'up'; since: number; givesUpAt: number; code?: string };

/** The run as a whole. */
export type RunStateEvent =
  | { kind: 'waiting'; reason: string; untilMs: number }
  | { kind: 'stopping'; reason: string }
  | { kind: 'notice'; message: string }
  /** Another shell paused the run (`genbatch pause`): no new submissions since then; or resumed it. */
  | { kind: 'paused'; since: number }
  | { kind: 'resumed' }
  /** Items wait for a decision on their gates (the count changed): how many, what they would cost, and the gates. */
  | { kind: 'waiting-for-decision'; items: number; credits: number; gates: number }
  /** A decision on an item's current version was recorded (by any process): the items it sends now, and those it skipped. */
  | {
      kind: 'decision';
      itemId: string;
      version: number;
      decision: 'approved' | 'rejected';
      unlocked: string[];
      skipped: string[];
    }
  /** Nothing was sent, answered or said for `quietMs` though work is open, and no known wait explains it: a bug, said with what each state waits for. */
  | { kind: 'stall'; quietMs: number; waiting: Waiting[] };

/** Events a log keeps only at debug level: one per request, which the client logs already. */
const CHATTY: ReadonlySet<RunEvent['kind']> = new Set(['answer', 'polled', 'submitted']);

/** The run's log as a listener: every event, the per-request ones at debug. */
export function logEvents(logger: Logger): (event: RunEvent) => void {
  return (event) => {
    if (CHATTY.has(event.kind)) logger.debug(event, event.kind);
    else logger.info(event, event.kind);
  };
}
