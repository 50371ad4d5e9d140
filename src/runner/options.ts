import type { OutputSink } from '../sink/index.js';
import type { Logger } from '../log/logger.js';
import type { CanarySize } from './feed/canary.js';

export interface RunOptions {
  /** Where verified outputs go, and the results with them. */
  outputs: OutputSink;
  /** A rehearsal on the simulator: its output dir is never a real run's. */
  rehearsal?: boolean;
  /** Long-poll seconds per GET of a job (the spec allows up to 30). */
  pollWaitSeconds: number;
  /** New attempts after a job ends FAILED or EXPIRED. */
  maxRetries: number;
  /** Run only the items whose id is one of these or matches one of these globs (and what they wait for); a later plain run does the rest. */
  only?: readonly string[];
  /** Run this many items first and go on only if they pass. */
  canary?: { size: CanarySize; maxFailures: number };
  /** Budget for the run, net of refunds. */
  maxCredits?: number;
  /** Stop before this many blocked submissions in the trailing 7 days (the service's threshold is 30). */
  maxBlocked: number;
  redoChanged: boolean;
  /** How long nothing may be sent, answered or said before the watchdog looks (default: 2 minutes of the service's time, 2 s at the least). */
  quietMs?: number;
  /** With nothing answering for this long (real milliseconds), the run stops (exit 4); 30 minutes by default. */
  unreachableMs?: number;
  /** Divides the key day, the 7-day window and back-off delays: for rehearsals on a time-scaled simulator. */
  timeScale: number;
  downloadConcurrency: number;
  /** A transfer (a download, an upload) that moves no byte for this long (real ms) is abandoned and tried again. */
  idleTimeoutMs: number;
  /** Outputs going to a bucket: submissions wait while more than this many bytes of saved outputs wait to be published. */
  maxUnpublishedBytes?: number;
  /** Outputs larger than this are refused (an endless body would fill the disk). */
  maxOutputBytes?: number;
  /** How long a step of a first sync may hold the event loop (5 ms; tests make every step a few rows). */
  syncStepMs?: number;
  now: () => number;
  logger?: Logger;
}
