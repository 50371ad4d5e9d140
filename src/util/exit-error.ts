import { GenbatchError } from './errors.js';
/** The exit codes of the product contract, and an error that already carries its own: the core throws it where the code is known (a usage error, the environment), the CLI prints it. */
export const EXIT = { ok: 0, incomplete: 1, usage: 2, stopped: 3, environment: 4, interrupted: 130 } as const;

/** What each exit code means: the one table, which every command's --help prints and docs/reference.md holds. */
export const EXIT_MEANINGS: readonly { code: number; meaning: string }[] = [
  { code: EXIT.ok, meaning: 'every item done, and every output, web copy and results file where it belongs' },
  { code: EXIT.incomplete, meaning: 'some items failed, were blocked or skipped, or wait for a later run' },
  { code: EXIT.usage, meaning: 'usage error or invalid manifest: nothing was submitted' },
  {
    code: EXIT.stopped,
    meaning:
      'stopped early with work left: the budget, the credits, a refused key, the moderation breaker, a failed canary, a drain',
  },
  {
    code: EXIT.environment,
    meaning:
      'the environment: the service or the bucket unreachable too long, the disk, the state held or unusable, another process holding the output place; or outputs, web copies or results still owed. Nothing paid is lost: fix it and run the same command',
  },
  {
    code: EXIT.interrupted,
    meaning: 'interrupted (Ctrl-C, SIGTERM, an abort): the state is saved, and the same command resumes',
  },
];

/** An error that already knows its exit code and what to tell the user. */
export class ExitError extends GenbatchError {
  constructor(
    readonly exitCode: number,
    message: string,
    /** A --json result that still belongs on stdout (the issues of an invalid manifest). */
    readonly stdout?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const usageError = (message: string) => new ExitError(EXIT.usage, message);
