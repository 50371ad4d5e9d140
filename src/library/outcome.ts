// The errors and the policy alone, not the client: a command that never talks HTTP does not load undici.
import { ApiError, ResponseShapeError, StorageError, TransportError } from '../api/errors.js';
import { NotTheServiceError } from '../api/first-contact.js';
import { reactionTo } from '../api/policy.js';
import { BucketError, OutputsHeldError, OutputsTakenError, bucketProblemText } from '../sink/index.js';
import type { RunSummary } from '../runner/index.js';
// The table alone: the runner's index would load the run, and its HTTP client, into every command that reports.
import { STOPS } from '../runner/core/stops.js';
import { OPEN_STATES, SqliteDriverError, StateFileError } from '../store/index.js';

import { EXIT, ExitError } from '../util/exit-error.js';

export { EXIT, ExitError, usageError } from '../util/exit-error.js';

/** The one place errors become messages and exit codes. */
export function describeFailure(error: unknown): { exitCode: number; message: string } {
  if (error instanceof ExitError) return { exitCode: error.exitCode, message: error.message };
  // A wrong base URL: the environment, in one line.
  if (error instanceof NotTheServiceError) return { exitCode: EXIT.environment, message: error.message };
  if (error instanceof SqliteDriverError) return { exitCode: EXIT.environment, message: error.message };
  if (error instanceof ApiError) {
    const reaction = reactionTo(error);
    const hint = reaction.do === 'stop-run' ? `\n${reaction.hint}` : '';
    return {
      exitCode: reaction.do === 'stop-run' ? EXIT.stopped : EXIT.incomplete,
      message: `${error.message}${hint}`,
    };
  }
  // The environment: nothing of the run is lost, and the same command goes on once it is fixed.
  if (error instanceof TransportError) {
    return {
      exitCode: EXIT.environment,
      message: `${error.message}\nCheck that the service (or simulator) at the base URL is reachable, then run the same command again.`,
    };
  }
  if (error instanceof OutputsTakenError) return { exitCode: EXIT.usage, message: error.message };
  // Another live process holds the place: nothing was sent; the same command goes on once it is free.
  if (error instanceof OutputsHeldError) return { exitCode: EXIT.environment, message: error.message };
  // The bucket, past what its policy rides out (or refusing): what was saved stays for the same command.
  if (error instanceof BucketError)
    return {
      exitCode: EXIT.environment,
      message: `${bucketProblemText(error)}. Nothing paid for is lost: run the same command again once the bucket answers.`,
    };
  if (error instanceof StateFileError) return { exitCode: EXIT.environment, message: error.message };
  if (error instanceof ResponseShapeError || error instanceof StorageError)
    return { exitCode: EXIT.incomplete, message: error.message };
  return {
    exitCode: EXIT.incomplete,
    message: error instanceof Error ? (error.stack ?? error.message) : String(error),
  };
}

/**
 * The exit code of a run that ran, decided here alone: its stop (an
 * interrupt is 130 whatever the end still owes), then what it owes.
 * Results that could not be written are owed like outputs: a run that would
 * end 0 or 1 ends 4 (the same command writes them).
 */
export function runExitCode(summary: RunSummary, resultsProblem: string | undefined): number {
  const code = exitCodeOf(summary);
  return resultsProblem && (code === EXIT.ok || code === EXIT.incomplete) ? EXIT.environment : code;
}

/**
 * A run's exit code, from its stop's rule (STOPS) and what it owes: 130
 * interrupted; 4 the environment stopped it, or outputs or copies are still
 * owed; 2 nothing selected; 3 stopped early with work left (budget, a refused
 * key, the moderation breaker, a canary, a drain); 0 every item done; 1
 * otherwise.
 */
export function exitCodeOf(summary: RunSummary): number {
  const { counts, stop } = summary;
  const open = OPEN_STATES.reduce((n, s) => n + counts[s], 0);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const ends = stop && STOPS[stop.kind].ends;
  if (ends === 'interrupted') return EXIT.interrupted;
  if (ends === 'environment') return EXIT.environment;
  // Outputs paid for and saved, not yet in the bucket, or web copies not made: the same command finishes them.
  if ((summary.publication?.waiting ?? 0) > 0 || (summary.copies?.missing ?? 0) > 0) return EXIT.environment;
  if (ends === 'usage') return EXIT.usage;
  if (ends === 'stopped' && open > 0) return EXIT.stopped;
  return counts.done === total ? EXIT.ok : EXIT.incomplete;
}

/** An error of a run that could not start, as `run()` rejects with it: its exit code and message as the CLI gives them. */
export function asRunError(error: unknown): ExitError {
  if (error instanceof ExitError) return error;
  const { exitCode, message } = describeFailure(error);
  return new ExitError(exitCode, message, undefined, { cause: error });
}
